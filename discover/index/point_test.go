package index

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/internal/agentfs"
)

// pointHome writes an index of n entries and returns its directory.
func pointHome(t *testing.T, n int) (string, map[string]Entry[*binPayload]) {
	t.Helper()
	dir := t.TempDir()
	ix := Load[*binPayload](dir, "pt", 1)
	want := map[string]Entry[*binPayload]{}
	for i := range n {
		p := fmt.Sprintf("/home/u/.claude/projects/p%d/%08d.jsonl", i%7, i)
		e := Entry[*binPayload]{Stamp: Stamp{1, uint64(i), int64(i * 10), int64(i)}, Offset: int64(i), Check: uint64(i) * 31,
			Payload: &binPayload{i, strings.Repeat("x", i%50)}}
		if i%11 == 0 {
			e.Payload = nil
		}
		ix.Put(p, e)
		want[p] = e
	}
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
	return dir, want
}

// indexBytes counts the bytes of index files read while fn runs.
func indexBytes(fn func()) int {
	var mu sync.Mutex
	n := 0
	restore := agentfs.SetReadHook(func(_ string, k int) { mu.Lock(); n += k; mu.Unlock() })
	fn()
	restore()
	return n
}

// TestLoadPointReadsOneBucket: a point load finds every entry a full load has,
// and reads the same few bytes per lookup for 50 entries as for 20,000.
func TestLoadPointReadsOneBucket(t *testing.T) {
	read := map[int]int{}
	for _, n := range []int{50, 20000} {
		dir, want := pointHome(t, n)
		full := Load[*binPayload](dir, "pt", 1)
		most := 0
		i := 0
		for p, w := range want {
			i++
			if i%97 != 0 && n > 50 {
				continue
			}
			var got Entry[*binPayload]
			var ok bool
			b := indexBytes(func() { got, ok = LoadPoint[*binPayload](dir, "pt", 1).Get(p) })
			most = max(most, b)
			fg, fok := full.Get(p)
			if !ok || !fok {
				t.Fatalf("n=%d %s: point %v, full %v", n, p, ok, fok)
			}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("n=%d %s (-put +point):\n%s", n, p, diff)
			}
			if diff := cmp.Diff(fg, got); diff != "" {
				t.Errorf("n=%d %s (-full +point):\n%s", n, p, diff)
			}
		}
		if _, ok := LoadPoint[*binPayload](dir, "pt", 1).Get("/nowhere"); ok {
			t.Errorf("n=%d: a path never put was found", n)
		}
		if _, ok := LoadPoint[*binPayload](dir, "pt", 2).Get(fmt.Sprintf("/home/u/.claude/projects/p0/%08d.jsonl", 0)); ok {
			t.Errorf("n=%d: another version's index was read", n)
		}
		read[n] = most
	}
	if read[20000] > 2048 || read[20000] > 4*read[50]+512 {
		t.Errorf("a lookup read up to %d index bytes among 50 entries, %d among 20,000", read[50], read[20000])
	}
}

// TestLoadPointJournal: what a point load puts goes to the journal; point and
// full loads see it; a full save folds it in and removes it; a damaged journal
// or bucket is a miss, never a wrong entry.
func TestLoadPointJournal(t *testing.T) {
	dir, want := pointHome(t, 300)
	var somePath string
	for p := range want {
		somePath = p
		break
	}
	ix := LoadPoint[*binPayload](dir, "pt", 1)
	grown := Entry[*binPayload]{Stamp: Stamp{1, 2, 999, 5}, Offset: 999, Payload: &binPayload{999, "grown"}}
	ix.Put(somePath, grown)
	newE := Entry[*binPayload]{Stamp: Stamp{1, 7, 1, 1}, Offset: 1, Payload: &binPayload{1, "new"}}
	ix.Put("/new", newE)
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
	jp := journalPath(ix.Path())
	if _, err := os.Stat(jp); err != nil {
		t.Fatalf("no journal: %v", err)
	}
	for name, ix := range map[string]*Index[*binPayload]{"point": LoadPoint[*binPayload](dir, "pt", 1), "full": Load[*binPayload](dir, "pt", 1)} {
		for p, w := range map[string]Entry[*binPayload]{somePath: grown, "/new": newE} {
			got, ok := ix.Get(p)
			if !ok {
				t.Fatalf("%s load: %s missing", name, p)
			}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("%s load %s (-journal +got):\n%s", name, p, diff)
			}
		}
	}
	full := Load[*binPayload](dir, "pt", 1)
	if err := full.Save(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(jp); !os.IsNotExist(err) {
		t.Errorf("the journal survived a full save: %v", err)
	}
	if got, ok := LoadPoint[*binPayload](dir, "pt", 1).Get("/new"); !ok || got.Payload.Name != "new" {
		t.Errorf("after folding: /new = %+v %v", got, ok)
	}

	// A flipped byte in every bucket: every lookup misses.
	b, _ := os.ReadFile(full.Path())
	dirStart, k, ok := readFooter(b[:len(b)-sumLen])
	if !ok {
		t.Fatal("no footer")
	}
	_ = k
	for i := len(binaryMagic) + 40; i < int(dirStart); i += 7 {
		b[i] ^= 0x55
	}
	if err := os.WriteFile(full.Path(), b, 0o600); err != nil {
		t.Fatal(err)
	}
	for p, w := range want {
		if got, ok := LoadPoint[*binPayload](dir, "pt", 1).Get(p); ok && !cmp.Equal(w, got) && p != somePath {
			t.Errorf("damaged file: %s read as %+v", p, got)
		}
	}
	// A torn journal record: ignored.
	os.WriteFile(jp, []byte("\x40\x00\x00\x00garbage"), 0o600)
	if _, ok := LoadPoint[*binPayload](dir, "pt", 1).Get("/torn"); ok {
		t.Error("a torn journal gave an entry")
	}
}

// TestLoadPointClose: Close releases the file; later lookups miss instead of
// reading a closed file.
func TestLoadPointClose(t *testing.T) {
	dir, want := pointHome(t, 10)
	ix := LoadPoint[*binPayload](dir, "pt", 1)
	var p string
	for p = range want {
		break
	}
	if _, ok := ix.Get(p); !ok {
		t.Fatal("entry not found")
	}
	if ix.point == nil {
		t.Fatal("no file open after a lookup")
	}
	ix.Close()
	if ix.point != nil {
		t.Error("Close kept the file")
	}
	for q := range want {
		if q != p {
			if _, ok := ix.Get(q); ok {
				t.Errorf("%s read after Close", q)
			}
			break
		}
	}
	Load[*binPayload](dir, "pt", 1).Close() // a no-op for a full load
}
