package pi

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	hexRE  = regexp.MustCompile(`^[0-9a-f]+$`)
)

// FuzzNameKey: the table-driven checks of a file name's id answer as the
// patterns they stand for (Pi ids are lower-case UUIDs; pi-rust names keep
// the first 8 characters).
func FuzzNameKey(f *testing.F) {
	f.Add("01a1e51b-16b7-7ffd-a95e-9c0503955141")
	f.Add("01A1E51B-16b7-7ffd-a95e-9c0503955141")
	f.Add("01a1e51b")
	f.Add("01a1e51b-16b7-7ffd-a95e-9c050395514\xff")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isUUID(s), uuidRE.MatchString(s); got != want {
			t.Fatalf("isUUID(%q) = %v, want %v", s, got, want)
		}
		if got, want := isHex(s), hexRE.MatchString(s); got != want {
			t.Fatalf("isHex(%q) = %v, want %v", s, got, want)
		}
		name := "/s/--x--/2026-11-16T16-05-20-183Z_" + s + ".jsonl"
		want := baseKey(name)
		if !strings.Contains(s, "/") {
			// The base name is "<time>_" + s + ".jsonl": its key is s when s is
			// an id. (With a '/' in s the base is another name, checked by
			// baseKey alone.)
			w := ""
			if uuidRE.MatchString(s) || (len(s) == 8 && hexRE.MatchString(s)) {
				w = s
			}
			if want != w {
				t.Fatalf("baseKey(%q) = %q, want %q", name, want, w)
			}
		}
		if got := nameKey(name); got != want {
			t.Fatalf("nameKey(%q) = %q, want %q", name, got, want)
		}
		// A bare name (how a lookup asks) answers as its base name does.
		for _, bare := range []string{s, "x_" + s + ".jsonl", s + ".jsonl"} {
			if got, want := nameKey(bare), baseKey(bare); got != want {
				t.Fatalf("nameKey(%q) = %q, want %q", bare, got, want)
			}
		}
	})
}

// baseKey is nameKey by its definition: the key after the first '_' of the
// base name without .jsonl, when it is a UUID or 8 hex digits.
func baseKey(path string) string {
	stem := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	_, k, ok := strings.Cut(stem, "_")
	if ok && (uuidRE.MatchString(k) || (len(k) == 8 && hexRE.MatchString(k))) {
		return k
	}
	return ""
}
