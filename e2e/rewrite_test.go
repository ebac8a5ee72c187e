package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rewriter turns a recording's temp paths into the stable ones the fixtures use
// (HOME = /home/dev), in file contents and file names, the way the shipped
// fixtures were made. It knows the derived forms too: Claude's project-folder
// slug and pi's session-folder name of every rewritten path.
type rewriter struct{ pairs []string }

func newRewriter(home, tmp string) *rewriter {
	const newHome = "/home/dev"
	r := &rewriter{}
	add := func(from, to string) { r.pairs = append(r.pairs, from, to) }
	// Longest first: tmp may live inside home's parent, slugs contain dashes.
	add(tmp, newHome+"/.tmp")
	add(home, newHome)
	add(claudeSlug(tmp), claudeSlug(newHome+"/.tmp"))
	add(claudeSlug(home), claudeSlug(newHome))
	add(piFolder(home), piFolder(newHome))
	return r
}

func claudeSlug(p string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, p)
}

// piFolder is pi's folder prefix for a path: "--" + path without the leading
// "/" and with "/" as "-" (the closing "--" follows the full cwd).
func piFolder(p string) string {
	return "--" + strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", "-")
}

func (r *rewriter) String(s string) string {
	return strings.NewReplacer(r.pairs...).Replace(s)
}

// binary files keep their bytes: rewriting inside SQLite pages would corrupt them.
func binaryFile(name string) bool {
	switch filepath.Ext(name) {
	case ".sqlite", ".db", ".sqlite-wal", ".sqlite-shm", ".db-wal", ".db-shm", ".key", ".sock":
		return true
	}
	return strings.HasSuffix(name, "-wal") || strings.HasSuffix(name, "-shm")
}

// copyTree copies src into dst with rewritten names and (text) contents. keep
// selects paths relative to src; sockets and other non-regular files are skipped.
func (r *rewriter) copyTree(src, dst string, keep func(rel string) bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() || !d.Type().IsRegular() || !keep(filepath.ToSlash(rel)) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !binaryFile(p) {
			b = []byte(r.String(string(b)))
		}
		out := filepath.Join(dst, r.String(rel))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
}

func TestRewriter(t *testing.T) {
	home, tmp := "/tmp/TestRecord1/001/home", "/tmp/TestRecord1/001/tmp"
	r := newRewriter(home, tmp)
	tests := map[string]string{
		home + "/webapp":    "/home/dev/webapp",
		tmp + "/claude-0/x": "/home/dev/.tmp/claude-0/x",
		"projects/" + claudeSlug(home+"/My.Project dir"):   "projects/-home-dev-My-Project-dir",
		"sessions/" + piFolder(home+"/api-server") + "--/": "sessions/--home-dev-api-server--/",
		`{"cwd":"` + home + `/billing","n":1}`:             `{"cwd":"/home/dev/billing","n":1}`,
		"unrelated /tmp/other":                             "unrelated /tmp/other",
	}
	for in, want := range tests {
		if got := r.String(in); got != want {
			t.Errorf("rewrite %q = %q, want %q", in, got, want)
		}
	}

	src, dst := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(src, claudeSlug(home+"/w")), 0o755)
	os.WriteFile(filepath.Join(src, claudeSlug(home+"/w"), "s.jsonl"), []byte(home+"/w\n"), 0o600)
	os.WriteFile(filepath.Join(src, "state_5.sqlite"), []byte("raw "+home), 0o600)
	os.WriteFile(filepath.Join(src, "skip.log"), []byte("x"), 0o600)
	if err := r.copyTree(src, dst, func(rel string) bool { return !strings.HasSuffix(rel, ".log") }); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "-home-dev-w", "s.jsonl")); err != nil || string(b) != "/home/dev/w\n" {
		t.Errorf("text file: %q, %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "state_5.sqlite")); string(b) != "raw "+home {
		t.Errorf("binary file rewritten: %q", b)
	}
	if exists(filepath.Join(dst, "skip.log")) {
		t.Error("copied a file keep rejected")
	}
}
