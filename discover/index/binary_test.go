package index

import (
	"errors"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// binPayload encodes itself, so the index uses the binary format for it.
type binPayload struct {
	Lines int
	Name  string
}

func (p *binPayload) MarshalBinary() ([]byte, error) {
	return []byte(strconv.Itoa(p.Lines) + "|" + p.Name), nil
}

func (p *binPayload) UnmarshalBinary(b []byte) error {
	n, name, ok := strings.Cut(string(b), "|")
	if !ok {
		return errors.New("bad payload")
	}
	v, err := strconv.Atoi(n)
	if err != nil {
		return err
	}
	p.Lines, p.Name = v, name
	return nil
}

func TestBinaryCodecChosen(t *testing.T) {
	if binaryCodecOf[*binPayload]() == nil || binaryCodecOf[binPayload]() == nil {
		t.Error("self-encoding payloads do not get the binary format")
	}
	if binaryCodecOf[payload]() != nil || binaryCodecOf[*payload]() != nil {
		t.Error("a plain payload got the binary format")
	}
}

func TestBinaryRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ix := Load[*binPayload](dir, "bin", 1)
	want := map[string]Entry[*binPayload]{
		"/a":     {Stamp: Stamp{1, 2, 3, 4}, Offset: 3, Check: 1<<63 + 5, Payload: &binPayload{7, "x"}},
		"/b":     {Stamp: Stamp{1, 3, 30, -4}, Offset: 0, Partial: true, Payload: &binPayload{0, ""}},
		"/c/nil": {Stamp: Stamp{9, 9, 9, 9}, Offset: 9},
	}
	for p, e := range want {
		ix.Put(p, e)
	}
	if err := saveAll(ix); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(ix.Path())
	if !strings.HasPrefix(string(b), binaryMagic) {
		t.Fatalf("not the binary format: %q", b[:20])
	}
	check := func(ix *Index[*binPayload]) {
		t.Helper()
		for p, w := range want {
			got, ok := ix.Get(p)
			if !ok {
				t.Fatalf("%s lost", p)
			}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("%s (-put +loaded):\n%s", p, diff)
			}
		}
	}
	check(Load[*binPayload](dir, "bin", 1))

	// Entries nobody decoded are written back unchanged by a partial run.
	ix = Load[*binPayload](dir, "bin", 1)
	ix.Put("/d", Entry[*binPayload]{Offset: 1, Payload: &binPayload{1, "d"}})
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
	want["/d"] = Entry[*binPayload]{Offset: 1, Payload: &binPayload{1, "d"}}
	check(Load[*binPayload](dir, "bin", 1))

	// Fresh needs no payload, and counts as use for pruning.
	ix = Load[*binPayload](dir, "bin", 1)
	if !ix.Fresh("/a", Stamp{1, 2, 3, 4}) || ix.Fresh("/a", Stamp{1, 2, 4, 4}) || ix.Fresh("/b", Stamp{1, 3, 30, -4}) || ix.Fresh("/zz", Stamp{}) {
		t.Error("Fresh disagrees with Plan")
	}
	if err := saveAll(ix); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/a", "/b"}, Load[*binPayload](dir, "bin", 1).Paths()); diff != "" {
		t.Errorf("after prune (-want +got):\n%s", diff)
	}

	// Value payloads whose pointer encodes itself work the same way.
	vx := Load[binPayload](dir, "val", 1)
	vx.Put("/v", Entry[binPayload]{Offset: 2, Payload: binPayload{2, "v"}})
	if err := vx.Save(); err != nil {
		t.Fatal(err)
	}
	if got, ok := Load[binPayload](dir, "val", 1).Get("/v"); !ok || got.Payload != (binPayload{2, "v"}) {
		t.Errorf("value payload: %+v %v", got, ok)
	}
	// Other versions and payload shapes start empty.
	if Load[*binPayload](dir, "bin", 2).Len() != 0 {
		t.Error("version 2 read a version 1 index")
	}
}

// TestBinaryGetOwnsPayload: each Get of a loaded entry decodes a payload of the
// caller's own; the index keeps only the encoded bytes, and writes them back.
func TestBinaryGetOwnsPayload(t *testing.T) {
	dir := t.TempDir()
	ix := Load[*binPayload](dir, "own", 1)
	ix.Put("/a", Entry[*binPayload]{Offset: 1, Payload: &binPayload{1, "a"}})
	ix.Put("/b", Entry[*binPayload]{Offset: 1, Payload: &binPayload{2, "b"}})
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
	ix = Load[*binPayload](dir, "own", 1)
	e1, ok1 := ix.Get("/a")
	e2, ok2 := ix.Get("/a")
	if !ok1 || !ok2 || e1.Payload == e2.Payload || *e1.Payload != (binPayload{1, "a"}) {
		t.Fatalf("Get: %+v %+v", e1.Payload, e2.Payload)
	}
	e1.Payload.Name = "changed by its owner"
	if e, _ := ix.Get("/a"); e.Payload.Name != "a" {
		t.Errorf("a payload handed out changed the index: %q", e.Payload.Name)
	}
	ix.Put("/c", Entry[*binPayload]{Offset: 1, Payload: &binPayload{3, "c"}}) // dirty: /a and /b are written back
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
	if e, ok := Load[*binPayload](dir, "own", 1).Get("/a"); !ok || *e.Payload != (binPayload{1, "a"}) {
		t.Errorf("written back: %+v %v", e.Payload, ok)
	}
}

func TestBinaryDamage(t *testing.T) {
	dir := t.TempDir()
	ix := Load[*binPayload](dir, "bin", 1)
	ix.Put("/good", Entry[*binPayload]{Offset: 1, Payload: &binPayload{1, "g"}})
	ix.Put("/bad", Entry[*binPayload]{Offset: 2, Payload: &binPayload{2, "b"}})
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(ix.Path())

	// A payload its own decoder rejects (under a valid checksum) is a miss, and
	// is dropped on save.
	body, _ := verifySum(b)
	bad := appendSum([]byte(strings.Replace(string(body), "2|b", "2#b", 1)))
	os.WriteFile(ix.Path(), bad, 0o600)
	ix = Load[*binPayload](dir, "bin", 1)
	if _, ok := ix.Get("/bad"); ok {
		t.Error("a damaged payload was returned")
	}
	ix.Put("/new", Entry[*binPayload]{Offset: 3, Payload: &binPayload{3, "n"}})
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/good", "/new"}, Load[*binPayload](dir, "bin", 1).Paths()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// Damage to the structure discards the file, and the next save rewrites it.
	for i := 1; i < len(b); i += 7 {
		os.WriteFile(ix.Path(), b[:i], 0o600)
		got := Load[*binPayload](dir, "bin", 1)
		if got.Len() != 0 {
			t.Fatalf("truncated to %d bytes: %d entries", i, got.Len())
		}
	}
	os.WriteFile(ix.Path(), append(append([]byte(nil), b...), 0), 0o600)
	got := Load[*binPayload](dir, "bin", 1)
	if got.Len() != 0 {
		t.Fatal("trailing garbage accepted")
	}
	if err := got.Save(); err != nil {
		t.Fatal(err)
	}
	if b2, _ := os.ReadFile(ix.Path()); !strings.HasPrefix(string(b2), binaryMagic) || Load[*binPayload](dir, "bin", 1).Len() != 0 {
		t.Error("a damaged index was not rewritten")
	}
}

// BenchmarkLoadBinary10k loads a 10,000-entry index and reads one entry: what a
// command that names one session pays for the index.
func BenchmarkLoadBinary10k(b *testing.B) {
	dir := b.TempDir()
	ix := Load[*binPayload](dir, "bin", 1)
	for i := 0; i < 10000; i++ {
		p := "/home/u/.claude/projects/-home-u-project-" + strconv.Itoa(i%200) + "/" + strconv.Itoa(1e8+i) + "-aaaa-bbbb-cccc-dddddddddddd.jsonl"
		ix.Put(p, Entry[*binPayload]{Stamp: Stamp{1, uint64(i), 1 << 20, 1 << 60}, Offset: 1 << 20, Check: 1 << 62, Payload: &binPayload{i, strings.Repeat("x", 400)}})
	}
	if err := ix.Save(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		ix := Load[*binPayload](dir, "bin", 1)
		if _, ok := ix.Get("/home/u/.claude/projects/-home-u-project-7/100000007-aaaa-bbbb-cccc-dddddddddddd.jsonl"); !ok || ix.Len() != 10000 {
			b.Fatal("entry missing")
		}
	}
}

// TestPathHashIsFNV1a: the bucket of a path is part of the file format (a
// point lookup reads one bucket), so the inline hash must stay FNV-1a exactly.
func TestPathHashIsFNV1a(t *testing.T) {
	for _, p := range []string{"", "a", "/home/dev/.claude/projects/-home-dev/0d5c4a52.jsonl", "ü\x00\xff"} {
		h := fnv.New64a()
		h.Write([]byte(p))
		if got, want := pathHash(p), h.Sum64(); got != want {
			t.Errorf("pathHash(%q) = %#x, want %#x", p, got, want)
		}
	}
}
