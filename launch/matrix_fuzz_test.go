package launch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadMatrix: any matrix file gives slots or an input error naming the
// file — never a panic, never another kind of error, never a slot without an
// adapter or with a suffix that could escape the worktree naming scheme.
func FuzzReadMatrix(f *testing.F) {
	for _, s := range []string{
		"prompt: fix it\ncwd: .\nmatrix:\n  - adapter: claude-code\n    model: [opus, sonnet]\n  - adapter: codex\n",
		"prompt: x\nmatrix:\n  - adapter: pi\n    model: m\n    extra: 1\n",
		"a: &a [*a, *a]\n",
		"matrix: {}\n", "", "---\n---\n", "prompt: [1, 2]\n",
		"matrix:\n  - adapter: \"../../etc\"\n    model: \"a/b\\u0000c\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "matrix.yaml")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, slots, err := ReadMatrix(path, nil)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %T %q: want an input error naming the file", err, err)
			}
			return
		}
		for _, s := range slots {
			if s.Adapter == "" {
				t.Errorf("slot without an adapter: %+v", s)
			}
			if strings.ContainsAny(s.Suffix, "/\\\x00") || strings.Contains(s.Suffix, "..") {
				t.Errorf("suffix %q can escape the naming scheme", s.Suffix)
			}
		}
	})
}
