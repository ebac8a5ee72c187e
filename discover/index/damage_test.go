package index

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"
)

type gobPayload struct {
	N    int
	Name string
}

// TestDamagedIndexNeverTrusted: 1,000 random damages (flip, truncate, extend,
// swap with another index's file) to both codecs' files; every load either sees
// exactly what was saved or nothing at all (a cold run).
func TestDamagedIndexNeverTrusted(t *testing.T) {
	dir := t.TempDir()
	bin := Load[*binPayload](dir, "bin", 1)
	gb := Load[gobPayload](dir, "gob", 1)
	for i := 0; i < 50; i++ {
		p := "/p/" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		bin.Put(p, Entry[*binPayload]{Offset: int64(i), Payload: &binPayload{i, p}})
		gb.Put(p, Entry[gobPayload]{Offset: int64(i), Payload: gobPayload{i, p}})
	}
	if bin.Save() != nil || gb.Save() != nil {
		t.Fatal("save")
	}
	orig := map[string][]byte{}
	for _, n := range []string{"bin", "gob"} {
		orig[n], _ = os.ReadFile(dir + "/" + n + ".index")
	}
	r := rand.New(rand.NewPCG(19, 19))
	for trial := 0; trial < 1000; trial++ {
		name := []string{"bin", "gob"}[trial%2]
		b := bytes.Clone(orig[name])
		switch r.IntN(4) {
		case 0:
			for n := r.IntN(3) + 1; n > 0; n-- {
				b[r.IntN(len(b))] ^= byte(1 << r.IntN(8))
			}
		case 1:
			b = b[:r.IntN(len(b))]
		case 2:
			extra := make([]byte, r.IntN(64)+1)
			for i := range extra {
				extra[i] = byte(r.Uint32())
			}
			if r.IntN(2) == 0 {
				b = append(b, extra...)
			} else {
				at := r.IntN(len(b))
				b = append(b[:at:at], append(extra, b[at:]...)...)
			}
		case 3:
			other := map[string]string{"bin": "gob", "gob": "bin"}[name]
			b = bytes.Clone(orig[other])
		}
		if bytes.Equal(b, orig[name]) {
			continue
		}
		os.WriteFile(dir+"/"+name+".index", b, 0o600)
		var n int
		if name == "bin" {
			n = Load[*binPayload](dir, "bin", 1).Len()
		} else {
			n = Load[gobPayload](dir, "gob", 1).Len()
		}
		if n != 0 {
			t.Fatalf("trial %d: a damaged %s index was trusted (%d entries)", trial, name, n)
		}
	}
	// And the undamaged files load whole.
	for name, b := range orig {
		os.WriteFile(dir+"/"+name+".index", b, 0o600)
	}
	if Load[*binPayload](dir, "bin", 1).Len() != 50 || Load[gobPayload](dir, "gob", 1).Len() != 50 {
		t.Fatal("the intact files did not load")
	}
}

// FuzzLoad: any bytes as an index file: no panic, and only a file with a valid
// checksum is trusted.
func FuzzLoad(f *testing.F) {
	dir := f.TempDir()
	ix := Load[*binPayload](dir, "seed", 1)
	ix.Put("/a", Entry[*binPayload]{Offset: 1, Payload: &binPayload{1, "a"}})
	ix.Save()
	seed, _ := os.ReadFile(ix.Path())
	f.Add(seed)
	f.Add([]byte(binaryMagic))
	f.Add(appendSum([]byte(binaryMagic + "\x05hello\xff\xff\xff\xff\x0f")))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := t.TempDir()
		os.WriteFile(d+"/fz.index", b, 0o600)
		ix := Load[*binPayload](d, "fz", 1)
		for _, p := range ix.Paths() {
			ix.Get(p)
		}
		if _, ok := verifySum(b); !ok && ix.Len() != 0 {
			t.Fatal("trusted without a valid checksum")
		}
		decodeBinary[*binPayload](b, "x")
		os.WriteFile(d+"/fg.index", b, 0o600)
		Load[gobPayload](d, "fg", 1).Len()
	})
}
