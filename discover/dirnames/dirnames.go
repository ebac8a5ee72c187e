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
//
// A Cache opened with a key function also keeps each listing's names in the
// order of their keys (for the agents, the session id a file name says), so a
// lookup by id or id prefix reads O(log n) names of a kept listing instead of
// all n (EachMatch).
package dirnames

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strings"
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

// header names the format; version 2 added the key order. A change to an
// adapter's key function must change the name its cache is opened with.
const header = "agentctl dirnames 2\n"

// Cache is one adapter's kept listings. The zero value and a Cache opened
// without a cache directory list every directory afresh.
type Cache struct {
	path string // the cache file; "" keeps nothing
	now  func() time.Time
	key  func(name []byte) []byte // nil: listings are not kept in key order

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
	// With a key function: keyed holds the offsets in names (uint32, little
	// endian) of the entries with a key, in key order (ties in listing order);
	// plain those of the others (directories, names without a key). Both nil:
	// not ordered yet (listed by this command, ordered when saved).
	keyed, plain []byte
	used         bool // listed or read by this command: saved
	// sum is the CRC-32C of names, keyed and plain as saved; an entry read
	// from the file is used only once it matches (sound is set then).
	sum   uint32
	sound bool
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (e *entry) checksum() uint32 {
	h := crc32.Update(0, castagnoli, e.names)
	h = crc32.Update(h, castagnoli, e.keyed)
	return crc32.Update(h, castagnoli, e.plain)
}

// Open returns the kept listings of adapter name in cacheDir ("": none). key,
// when not nil, says the key of a file name ("" for none; directories have
// none); EachMatch finds names by it.
func Open(cacheDir, name string, key func(name []byte) []byte) *Cache {
	c := &Cache{now: time.Now, key: key}
	if cacheDir != "" {
		c.path = filepath.Join(cacheDir, name+".dirnames")
	}
	return c
}

// Each calls fn for every entry of dir (not "." or ".."), as index.EachName
// does: name is valid only during the call. Entries come from the kept listing
// when dir is unchanged since it was kept, in the order they were listed then.
func (c *Cache) Each(dir string, fn func(name []byte, kind index.EntryKind)) error {
	_, err := c.list(dir, nil, fn)
	return err
}

// EachMatch is Each for a lookup: from an unchanged kept listing it calls fn
// only for the names whose key starts with one of prefixes, and for every
// entry without a key (directories included); otherwise for every entry, as
// Each. fn must still test each name: EachMatch only leaves names out. Each
// name is seen once. more reports that names with a key were left out.
func (c *Cache) EachMatch(dir string, prefixes []string, fn func(name []byte, kind index.EntryKind)) (more bool, err error) {
	if c == nil || c.key == nil || len(prefixes) == 0 {
		return false, c.Each(dir, fn)
	}
	for _, p := range prefixes {
		if p == "" {
			return false, c.Each(dir, fn) // every key starts with ""
		}
	}
	return c.list(dir, prefixes, fn)
}

// list is Each (prefixes nil) and EachMatch.
func (c *Cache) list(dir string, prefixes []string, fn func(name []byte, kind index.EntryKind)) (more bool, err error) {
	if c == nil || c.path == "" {
		return false, index.EachName(dir, fn)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return false, index.EachName(dir, fn) // the listing's own error
	}
	st := index.StampOf(fi)
	c.mu.Lock()
	c.load()
	e := c.dirs[dir]
	if e != nil && e.stamp == st && !e.sound {
		if e.sound = e.checksum() == e.sum; !e.sound {
			delete(c.dirs, dir) // damaged: listed again
			e = nil
		}
	}
	if e != nil && e.stamp == st {
		e.used = true
		if c.key != nil && e.keyed == nil && e.plain == nil && len(e.names) > 0 {
			c.dirty = true // kept without its key order: saved with it
		}
		// The order as of now: Save may set it meanwhile (never change it).
		ord := order{names: e.names, keyed: e.keyed, plain: e.plain}
		c.mu.Unlock()
		if prefixes != nil {
			if given, ok := ord.match(prefixes, c.key, fn); ok {
				return given < len(ord.keyed)/4, nil
			}
		}
		each(ord.names, fn)
		return false, nil
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
		return false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now().Sub(fi.ModTime()) < racyWindow {
		delete(c.dirs, dir)
		return false, nil
	}
	c.dirs[dir] = &entry{stamp: st, names: names, used: true, sound: true}
	c.dirty = true
	return false, nil
}

// at is the entry at offset off of names; ok is false for an offset that is
// not an entry's start (a damaged cache).
func at(names []byte, off uint32) (name []byte, kind index.EntryKind, ok bool) {
	if uint64(off)+1 >= uint64(len(names)) || (off > 0 && names[off-1] != 0) {
		return nil, 0, false
	}
	rest := names[off+1:]
	i := bytes.IndexByte(rest, 0)
	if i < 1 {
		return nil, 0, false
	}
	return rest[:i], index.EntryKind(names[off]), true
}

// order is a kept listing's names and their key order (entry).
type order struct{ names, keyed, plain []byte }

// match calls fn for the entries whose key starts with one of prefixes and
// for those without a key, by binary search of the key order; given is how
// many of the entries with a key it gave. ok false, having called fn for
// none: the entry is not ordered or its order is damaged.
func (e order) match(prefixes []string, key func([]byte) []byte, fn func(name []byte, kind index.EntryKind)) (given int, ok bool) {
	if e.keyed == nil && e.plain == nil {
		return 0, false
	}
	n := len(e.keyed) / 4
	keyAt := func(i int) (k []byte, ok bool) {
		name, _, ok := at(e.names, binary.LittleEndian.Uint32(e.keyed[4*i:]))
		if !ok {
			return nil, false
		}
		return key(name), true
	}
	var offs []uint32
	var seen map[uint32]bool // ranges of several prefixes may overlap
	if len(prefixes) > 1 {
		seen = map[uint32]bool{}
	}
	damaged := false
	for _, p := range prefixes {
		i := sort.Search(n, func(i int) bool {
			k, ok := keyAt(i)
			if !ok {
				damaged = true
				return true
			}
			return string(k) >= p
		})
		for ; i < n && !damaged; i++ {
			k, ok := keyAt(i)
			if !ok {
				damaged = true
			} else if !strings.HasPrefix(string(k), p) {
				break
			}
			off := binary.LittleEndian.Uint32(e.keyed[4*i:])
			if seen == nil || !seen[off] {
				if seen != nil {
					seen[off] = true
				}
				offs = append(offs, off)
			}
		}
	}
	given = len(offs)
	for i := 0; i+4 <= len(e.plain); i += 4 {
		offs = append(offs, binary.LittleEndian.Uint32(e.plain[i:]))
	}
	if damaged {
		return 0, false
	}
	for _, off := range offs {
		if _, _, ok := at(e.names, off); !ok {
			return 0, false
		}
	}
	for _, off := range offs {
		name, kind, _ := at(e.names, off)
		fn(name, kind)
	}
	return given, true
}

// order fills e.keyed and e.plain from e.names (under the Cache's lock; both
// set at once).
func (e *entry) order(key func([]byte) []byte) {
	type kv struct {
		k   string
		off uint32
	}
	var keyed []kv
	plain := []byte{}
	for off := 0; off < len(e.names); {
		name, kind, ok := at(e.names, uint32(off))
		if !ok {
			break
		}
		if k := key(name); kind != index.KindDir && len(k) > 0 {
			keyed = append(keyed, kv{string(k), uint32(off)})
		} else {
			plain = binary.LittleEndian.AppendUint32(plain, uint32(off))
		}
		off += len(name) + 2
	}
	sort.SliceStable(keyed, func(i, j int) bool { return keyed[i].k < keyed[j].k })
	offs := make([]byte, 0, 4*len(keyed))
	for _, x := range keyed {
		offs = binary.LittleEndian.AppendUint32(offs, x.off)
	}
	e.keyed, e.plain = offs, plain
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
	enc := index.Enc{Buf: []byte(header)}
	for dir, e := range c.dirs {
		if !e.used {
			continue
		}
		enc.Str(dir)
		enc.Uint(e.stamp.Dev)
		enc.Uint(e.stamp.Ino)
		enc.Int(e.stamp.Size)
		enc.Int(e.stamp.MtimeNs)
		enc.Bytes(e.names)
		if c.key != nil && e.keyed == nil && e.plain == nil && len(e.names) < 1<<32 {
			e.order(c.key)
		}
		enc.Bytes(e.keyed)
		enc.Bytes(e.plain)
		enc.Uint32(e.checksum())
	}
	b := enc.Buf
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
	d := index.NewDec(b)
	for d.Len() > 0 {
		dir := d.Bytes()
		var e entry
		e.stamp.Dev, e.stamp.Ino = d.Uint(), d.Uint()
		e.stamp.Size, e.stamp.MtimeNs = d.Int(), d.Int()
		names := d.Bytes()
		keyed, plain := d.Bytes(), d.Bytes()
		e.sum = d.Uint32()
		if d.Bad() || (len(names) > 0 && names[len(names)-1] != 0) || len(keyed)%4 != 0 || len(plain)%4 != 0 {
			return nil, errDamaged
		}
		e.names = names
		if len(keyed)+len(plain) > 0 {
			e.keyed, e.plain = keyed, plain
		}
		out[string(dir)] = &e
	}
	return out, nil
}
