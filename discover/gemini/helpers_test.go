package gemini

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
)

// fixtureHome is the real Gemini CLI 0.61.0 home copied from the shared
// fixtures (newagents/gemini).
const fixtureHome = "testdata/home"

// now is after every fixture timestamp (2026-12-01T22:25–22:27Z).
var now = time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)

// testEnv builds an Env over home with an empty (but available) process table.
func testEnv(t *testing.T, home string, vars map[string]string) (*discover.Env, *[]string) {
	t.Helper()
	if _, ok := vars["TMPDIR"]; !ok {
		// Never the machine's own temp dir (error reports are read there).
		v := map[string]string{"TMPDIR": t.TempDir()}
		for k, x := range vars {
			v[k] = x
		}
		vars = v
	}
	return discovertest.NewWarnEnv(home, vars, nil, now)
}

func discoverAll(t *testing.T, env *discover.Env) map[string]discover.Session {
	t.Helper()
	return discovertest.DiscoverAll(t, New(), env)
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

var tp = discovertest.TimePtr

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyTreeReplacing copies a directory, replacing old with new in every file
// (the recordings name the paths they were made under).
func copyTreeReplacing(t *testing.T, src, dst, old, new string) {
	t.Helper()
	discovertest.CopyTree(t, src, dst)
	err := filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(p, []byte(strings.ReplaceAll(string(b), old, new)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
