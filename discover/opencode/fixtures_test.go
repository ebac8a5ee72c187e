package opencode

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
)

// fact is one row of the fixture README's "Expected facts — OpenCode" tables, plus
// the status docs/agents/opencode.md §4.3 derives for it with no opencode process alive.
type fact struct {
	id, dir, title, model, prompt string
	user, assistant               int
	in, out                       int64
	status, detail                string
}

const (
	frontendProject = "7b7b767ad85f27d56540832f03fdc39345ee6737"
	crashedReply    = "crashed: assistant message open (no time.completed) and no opencode process runs it (killed outside agentctl?)"
	crashedPrompt   = "crashed: the prompt got no reply and no opencode process runs it (a startup error such as an unknown model, or killed outside agentctl)"
)

// home db: git project 7b7b767a…, worktree /home/dev/frontend.
var homeFacts = []fact{
	{"ses_e0513e0d3ffeb4Nc0mnqJKxBsR", "/home/dev/frontend", "Hello from the fake server.", "fake/fake-model", `"Say hello slowly"`, 1, 1, 42, 7, "stopped", "done (finish=stop)"},
	{"ses_e051289a0ffeqK7anT8uiJbjZe", "/home/dev/frontend", "New session - 2026-11-20T21:47:08.768Z", "fake/fake-model", `"Signal test TERM"`, 1, 1, 0, 0, "failed", crashedReply},
	{"ses_e05125f0effeoINTO4R28ZI67S", "/home/dev/frontend", "Hello from the fake server.", "fake/fake-model", `"Signal test INT"`, 1, 1, 42, 7, "stopped", "done (finish=stop)"},
	{"ses_e0511ef9bffeSVrWS3Clgxzegt", "/home/dev/frontend", "agentctl-tag-123", "fake/fake-model", "Say hello via server", 1, 1, 0, 0, "stopped", "aborted"},
	{"ses_e050d02e5ffeukngcXSM5wIgrW", "/home/dev/frontend", "tag-early-check", "fake/fake-model", "", 1, 0, 0, 0, "failed", crashedPrompt},
	{"ses_e050c7e55ffe0bXcOLdALSOg2m", "/home/dev/frontend", "New session - 2026-11-20T21:53:44.874Z", "fake/fake-model", `"listener check"`, 1, 1, 0, 0, "failed", crashedReply},
}

// second-data-home db: project global (no git).
var secondFacts = []fact{
	{"ses_e0515a303ffe5my0YIIwIWl9lm", "/home/dev/docs-site", "Hello from the fake server.", "fake/fake-model", `"Say hello"`, 2, 2, 84, 14, "stopped", "done (finish=stop)"},
	{"ses_e05132ea8ffex13Y6SC0gNwjrw", "/home/dev/tools", "Hello from the fake server.", "fake/fake-model", `"PWD test"`, 1, 1, 42, 7, "stopped", "done (finish=stop)"},
	// session.model {"id":"","providerID":"fake-model"}: a bare -m value
	{"ses_e0512f1c6ffeAuSJJvbKtxbKjS", "/home/dev/docs-site", "New session - 2026-11-20T21:46:42.105Z", "fake-model", `"bare model test"`, 1, 0, 0, 0, "failed", crashedPrompt},
	{"ses_e0512d8f7ffeyxXLCfMtaFA9mM", "/home/dev/docs-site", "New session - 2026-11-20T21:46:48.457Z", "nosuch/model", `"unknown provider test"`, 1, 0, 0, 0, "failed", crashedPrompt},
	{"ses_e0512bc98ffeZDmfyuqbY6KQL2", "/home/dev/docs-site", "New session - 2026-11-20T21:46:55.719Z", "fake-model", `"bare model test 2"`, 1, 0, 0, 0, "failed", crashedPrompt},
	{"ses_e051132e4ffeMqPr473ml2oBrt", "/home/dev/docs-site", "agentctl:tag-42", "fake/fake-model", `"title tag test"`, 1, 1, 42, 7, "stopped", "done (finish=stop)"},
	{"ses_e051118ceffeOuOKh3C0YwstV5", "/home/dev/docs-site", "Hello from the fake server.", "fake/fake-model", "prompt from stdin with spaces\n", 1, 1, 42, 7, "stopped", "done (finish=stop)"},
}

func checkFacts(t *testing.T, env *discover.Env, facts []fact, dbPath, project, projectID string) {
	t.Helper()
	got, warns := list(t, env)
	if len(warns) > 0 {
		t.Errorf("warnings: %q", warns)
	}
	if len(got) != len(facts) {
		t.Errorf("listed %d sessions, want %d", len(got), len(facts))
	}
	for _, f := range facts {
		s, ok := got[f.id]
		if !ok {
			t.Errorf("%s not listed", f.id)
			continue
		}
		title := s.Title
		if d, ok := s.Extra["default_title"].(string); ok {
			if s.Title != "" {
				t.Errorf("%s: both a title %q and a default title %q", f.id, s.Title, d)
			}
			title = d
		}
		gotF := fact{id: s.ID, dir: s.Cwd, title: title, model: s.Model, prompt: s.Prompt, status: s.Status, detail: s.EvidenceDetail}
		if s.Tokens != nil {
			gotF.in, gotF.out = s.Tokens.Input, s.Tokens.Output
		} else {
			t.Errorf("%s: no tokens", f.id)
		}
		gotF.user, gotF.assistant = msgCounts(peek(t, env, s, 0))
		if diff := cmp.Diff(f, gotF, cmp.AllowUnexported(fact{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", f.id, diff)
		}
		if s.Adapter != "opencode" || s.AgentVersion != "1.18.33" || s.Path != dbPath {
			t.Errorf("%s: adapter %q version %q path %q", f.id, s.Adapter, s.AgentVersion, s.Path)
		}
		// The fake provider has no price: OpenCode records 0, which is "not
		// reported" (discover.Cost), so the cost is absent, never 0.
		if s.CostUSD != nil || s.CostSource != "" {
			t.Errorf("%s: cost %v source %q, want none (the agent's 0 is no price)", f.id, *s.CostUSD, s.CostSource)
		}
		if s.Tokens != nil && (s.Tokens.CacheRead != 0 || s.Tokens.CacheWrite != 0) {
			t.Errorf("%s: cache tokens %+v, want 0", f.id, *s.Tokens)
		}
		if s.Extra["project"] != project || s.Extra["project_id"] != projectID {
			t.Errorf("%s: project %v (%v), want %s (%s)", f.id, s.Extra["project"], s.Extra["project_id"], project, projectID)
		}
		if s.Evidence != discover.EvidenceTranscript || s.PID != 0 || s.Inferred {
			t.Errorf("%s: evidence %q pid %d inferred %v", f.id, s.Evidence, s.PID, s.Inferred)
		}
		if s.StartedAt == nil || s.LastActivity == nil || s.EndedAt == nil {
			t.Errorf("%s: times %v %v %v", f.id, s.StartedAt, s.LastActivity, s.EndedAt)
		}
	}
}

func TestHomeDBFacts(t *testing.T) {
	home := testdata(t, "home")
	env := newEnv(home, nil, noProcs())
	checkFacts(t, env, homeFacts, home+"/.local/share/opencode/opencode.db", "/home/dev/frontend", frontendProject)
}

func TestSecondDataHomeFacts(t *testing.T) {
	// An independent data dir reached through XDG_DATA_HOME; HOME has nothing.
	env := newEnv(t.TempDir(), map[string]string{"XDG_DATA_HOME": testdata(t, "second-data-home")}, noProcs())
	checkFacts(t, env, secondFacts, testdata(t, "second-data-home/opencode/opencode.db"), "/", "global")
}

// The times come from the session row (epoch ms), checked against OpenCode's own
// `session list --format json` capture; ended_at is the last assistant's
// time.completed.
func TestTimesMatchSessionListCapture(t *testing.T) {
	b, err := os.ReadFile(testdata(t, "captures/session-list-format-json.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cap []struct {
		ID, Title, ProjectID, Directory string
		Created, Updated                int64
	}
	if err := json.Unmarshal(b, &cap); err != nil || len(cap) != 1 {
		t.Fatalf("capture: %v (%d rows)", err, len(cap))
	}
	got, _ := list(t, newEnv(testdata(t, "home"), nil, noProcs()))
	c := cap[0]
	s := got[c.ID]
	if s.Title != c.Title || s.Cwd != c.Directory || s.Extra["project_id"] != c.ProjectID {
		t.Errorf("got %q %q %v, capture %q %q %q", s.Title, s.Cwd, s.Extra["project_id"], c.Title, c.Directory, c.ProjectID)
	}
	if !s.StartedAt.Equal(time.UnixMilli(c.Created)) || !s.LastActivity.Equal(time.UnixMilli(c.Updated)) {
		t.Errorf("times %v %v, capture %d %d", s.StartedAt, s.LastActivity, c.Created, c.Updated)
	}
	if want := time.UnixMilli(1795211158240); !s.EndedAt.Equal(want) {
		t.Errorf("ended_at %v, want the assistant's time.completed %v", s.EndedAt, want)
	}
	if s.StartedAt.Location() != time.UTC {
		t.Errorf("times not UTC: %v", s.StartedAt)
	}
}

// The `opencode run --format json` capture's session, message and part ids are
// the ones in the database (pitfall 3's read side: ids are never invented).
func TestRunCaptureIDsAreInTheDB(t *testing.T) {
	f, err := os.Open(testdata(t, "captures/run-format-json.stdout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := newEnv(t.TempDir(), map[string]string{"XDG_DATA_HOME": testdata(t, "second-data-home")}, noProcs())
	got, _ := list(t, env)
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		var ev struct {
			SessionID string `json:"sessionID"`
			Part      struct {
				ID, MessageID, Type, Text string
			} `json:"part"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		s, ok := got[ev.SessionID]
		if !ok {
			t.Fatalf("capture session %s not listed", ev.SessionID)
		}
		found := false
		for _, m := range peek(t, env, s, 0) {
			if m.MessageID != ev.Part.MessageID {
				continue
			}
			for _, r := range m.Raw {
				var row struct{ ID string }
				if json.Unmarshal(r, &row) == nil && row.ID == ev.Part.ID {
					found = true
				}
			}
			if ev.Part.Type == "text" && m.Text != ev.Part.Text {
				t.Errorf("message %s text %q, capture %q", m.MessageID, m.Text, ev.Part.Text)
			}
		}
		if !found {
			t.Errorf("part %s of message %s not in peek's raw rows", ev.Part.ID, ev.Part.MessageID)
		}
		n++
	}
	if n != 3 {
		t.Errorf("read %d capture lines, want 3", n)
	}
}
