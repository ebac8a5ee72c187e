package gemini

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// fixtureHome is the real Gemini CLI 0.61.0 home copied from the shared
// fixtures (newagents/gemini).
const fixtureHome = "testdata/home"

// now is after every fixture timestamp (2026-12-01T22:25–22:27Z).
var now = time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)

// testEnv builds an Env over home with an empty (but available) process table.
func testEnv(t *testing.T, home string, vars map[string]string) (*discover.Env, *[]string) {
	t.Helper()
	var mu sync.Mutex
	var warns []string
	if _, ok := vars["TMPDIR"]; !ok {
		// Never the machine's own temp dir (error reports are read there).
		v := map[string]string{"TMPDIR": t.TempDir()}
		for k, x := range vars {
			v[k] = x
		}
		vars = v
	}
	env := &discover.Env{
		Home:   home,
		Getenv: func(k string) string { return vars[k] },
		Procs:  &proc.Fake{Boot: "boot-1"},
		Now:    func() time.Time { return now },
	}
	env = env.WithWarn(func(s string) {
		mu.Lock()
		warns = append(warns, s)
		mu.Unlock()
	})
	return env, &warns
}

func discoverAll(t *testing.T, env *discover.Env) map[string]discover.Session {
	t.Helper()
	ss, err := New().Discover(context.Background(), env)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	out := map[string]discover.Session{}
	for _, s := range ss {
		if _, dup := out[s.ID]; dup {
			t.Errorf("session %s listed twice", s.ID)
		}
		out[s.ID] = s
	}
	return out
}

// writeLines writes a session file under home's .gemini/tmp/<project>/chats
// and the project's .project_root, returning the file's path.
func writeSession(t *testing.T, home, project, root, name string, lines ...string) string {
	t.Helper()
	dir := filepath.Join(home, ".gemini", "tmp", project)
	chats := filepath.Join(dir, "chats")
	if err := os.MkdirAll(chats, 0o755); err != nil {
		t.Fatal(err)
	}
	if root != "" {
		if err := os.WriteFile(filepath.Join(dir, ".project_root"), []byte(root+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(chats, name)
	body := strings.Join(lines, "\n")
	if !strings.HasSuffix(name, ".json") {
		body += "\n"
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Records in Gemini CLI 0.61's shapes.

func header(id, start string) string {
	return `{"sessionId":"` + id + `","projectHash":"","startTime":"` + start + `","lastUpdated":"` + start + `","kind":"main"}`
}

const ctxMsg = `{"id":"ctx0","timestamp":"2026-12-01T10:00:00.001Z","type":"user","content":[{"text":"<session_context>\nThis is the Gemini CLI.\n</session_context>"}]}`

func setMessages(ts string, msgs ...string) string {
	return `{"$set":{"messages":[` + strings.Join(msgs, ",") + `],"lastUpdated":"` + ts + `"}}`
}

func userMsg(id, ts, text string) string {
	return `{"id":"` + id + `","timestamp":"` + ts + `","type":"user","content":[{"text":"` + text + `"}]}`
}

func geminiMsg(id, ts, text, tokens, model string) string {
	s := `{"id":"` + id + `","timestamp":"` + ts + `","type":"gemini","content":"` + text + `","thoughts":[]`
	if tokens != "" {
		s += `,"tokens":` + tokens
	}
	if model != "" {
		s += `,"model":"` + model + `"`
	}
	return s + `}`
}

func lastUpdated(ts string) string { return `{"$set":{"lastUpdated":"` + ts + `"}}` }

func tp(s string) *time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return &t
}

func appendRaw(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies a directory, replacing old with new in every file (the
// recordings name the paths they were made under).
func copyTree(t *testing.T, src, dst, old, new string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if old != "" {
			b = []byte(strings.ReplaceAll(string(b), old, new))
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
