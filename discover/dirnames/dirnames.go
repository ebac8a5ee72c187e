// Package dirnames remembers the names in the agents' session directories
// between commands, so that a lookup by id does not read every name of a big
// history again: a directory's listing is kept in the parse index directory
// (cache/) with the directory's stamp (device, inode, size, mtime), and used
// while a stat of the directory returns the same stamp. Adding, removing or
// renaming an entry changes the directory's mtime, so a kept listing is the
// listing. A directory changed within the last racyWindow is listed and not
// kept: a name added in the same clock tick as the stat would leave its mtime
// unchanged. Deleting the cache changes no output, only the cost of the next
// lookup.
package dirnames

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/discover/index"
)

var hook atomic.Pointer[func(string)]

// SetListHook makes fn see every directory Each lists from the file system
// rather than from a kept listing, until restore is called (tests only: a
// lookup on an unchanged home lists no session folder).
func SetListHook(fn func(dir string)) (restore func()) {
	old := hook.Swap(&fn)
	return func() { hook.Store(old) }
}

// racyWindow is how recently changed a directory may be and still be kept.
const racyWindow = 2 * time.Second

const header = "agentctl dirnames 1\n"

// Cache is one adapter's kept listings. The zero value and a Cache opened
// without a cache directory list every directory afresh.
type Cache struct {
	path string // the cache file; "" keeps nothing
	now  func() time.Time

	mu     sync.Mutex
	loaded bool
	dirs   map[string]*entry
	dirty  bool
}

// entry is one directory's kept listing: each name as its kind, the name, and
// a NUL.
type entry struct {
	stamp index.Stamp
	names []byte
	used  bool // listed or read by this command: saved
}

// Open returns the kept listings of adapter name in cacheDir ("": none).
func Open(cacheDir, name string) *Cache {
	c := &Cache{now: time.Now}
	if cacheDir != "" {
		c.path = filepath.Join(cacheDir, name+".dirnames")
	}
	return c
}

// Each calls fn for every entry of dir (not "." or ".."), as index.EachName
// does: name is valid only during the call. Entries come from the kept listing
// when dir is unchanged since it was kept, in the order they were listed then.
func (c *Cache) Each(dir string, fn func(name []byte, kind index.EntryKind)) error {
	if c == nil || c.path == "" {
		return index.EachName(dir, fn)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return index.EachName(dir, fn) // the listing's own error
	}
	st := index.StampOf(fi)
	c.mu.Lock()
	c.load()
	e := c.dirs[dir]
	if e != nil && e.stamp == st {
		e.used = true
		c.mu.Unlock()
		each(e.names, fn)
		return nil
	}
	c.mu.Unlock()
	// Listed after the stat: a change during the listing leaves a stamp that
	// differs from the directory's next one, so it is listed again then.
	if fn := hook.Load(); fn != nil {
		(*fn)(dir)
	}
	var names []byte
	err = index.EachName(dir, func(name []byte, kind index.EntryKind) {
		names = append(names, byte(kind))
		names = append(names, name...)
		names = append(names, 0)
		fn(name, kind)
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now().Sub(fi.ModTime()) < racyWindow {
		delete(c.dirs, dir)
		return nil
	}
	c.dirs[dir] = &entry{stamp: st, names: names, used: true}
	c.dirty = true
	return nil
}

func each(names []byte, fn func(name []byte, kind index.EntryKind)) {
	for len(names) > 1 {
		i := bytes.IndexByte(names, 0)
		if i < 1 {
			return
		}
		fn(names[1:i], index.EntryKind(names[0]))
		names = names[i+1:]
	}
}

// Save writes the listings this command used when one of them is new; the
// others are dropped (their directories were not walked: gone, or out of the
// roots). Errors mean only that the next lookup lists again.
func (c *Cache) Save() error {
	if c == nil || c.path == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dirty {
		return nil
	}
	b := []byte(header)
	for dir, e := range c.dirs {
		if !e.used {
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(dir)))
		b = append(b, dir...)
		b = binary.AppendUvarint(b, e.stamp.Dev)
		b = binary.AppendUvarint(b, e.stamp.Ino)
		b = binary.AppendVarint(b, e.stamp.Size)
		b = binary.AppendVarint(b, e.stamp.MtimeNs)
		b = binary.AppendUvarint(b, uint64(len(e.names)))
		b = append(b, e.names...)
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(c.path), filepath.Base(c.path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), c.path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	c.dirty = false
	return nil
}

// load reads the cache file once; a missing or damaged one is empty.
func (c *Cache) load() {
	if c.loaded {
		return
	}
	c.loaded = true
	c.dirs = map[string]*entry{}
	b, err := readCache(c.path)
	if err != nil || !bytes.HasPrefix(b, []byte(header)) {
		return
	}
	dirs, err := decode(b[len(header):])
	if err != nil {
		return
	}
	c.dirs = dirs
}

var errDamaged = errors.New("damaged")

func decode(b []byte) (map[string]*entry, error) {
	out := map[string]*entry{}
	uv := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	sv := func() int64 {
		v, n := binary.Varint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	bs := func() ([]byte, bool) {
		n := uv()
		if b == nil || n > uint64(len(b)) {
			return nil, false
		}
		v := b[:n:n]
		b = b[n:]
		return v, true
	}
	for len(b) > 0 {
		dir, ok := bs()
		if !ok {
			return nil, errDamaged
		}
		var e entry
		e.stamp.Dev, e.stamp.Ino = uv(), uv()
		e.stamp.Size, e.stamp.MtimeNs = sv(), sv()
		names, ok := bs()
		if !ok || (len(names) > 0 && names[len(names)-1] != 0) {
			return nil, errDamaged
		}
		e.names = names
		out[string(dir)] = &e
	}
	return out, nil
}
