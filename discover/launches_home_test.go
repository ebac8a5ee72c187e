package discover

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// homeAdapter lists the sessions of the home it is asked to read (Env.Home),
// and notes which homes it was asked to read.
type homeAdapter struct {
	name   string
	byHome map[string][]Session
	mu     sync.Mutex
	read   []string
}

func (h *homeAdapter) Name() string { return h.name }
func (h *homeAdapter) Discover(_ context.Context, env *Env) ([]Session, error) {
	h.mu.Lock()
	h.read = append(h.read, env.Home+" HOME="+env.LookupEnv("HOME"))
	h.mu.Unlock()
	return append([]Session(nil), h.byHome[env.Home]...), nil
}
func (h *homeAdapter) Peek(context.Context, *Env, Session, int) ([]Message, error) { return nil, nil }

// A launch record launched under another home (`launch --home /b`) is read
// under that home: its session's own facts come from /b's files even when the
// command reads /a, whether it lists, looks up or resolves; a session of the
// same id under /a is left as it is, and the other adapters are not asked.
func TestLaunchRecordReadUnderItsHome(t *testing.T) {
	at := time.Unix(1795211000, 0).UTC()
	claude := &homeAdapter{name: "claude-code", byHome: map[string][]Session{
		"/a": {{ID: "s-a", Adapter: "claude-code", Status: StatusStopped, LastActivity: &at, Model: "model-a"}},
		"/b": {
			{ID: "s-b", Adapter: "claude-code", Status: StatusStopped, LastActivity: &at, Model: "model-b"},
			{ID: "s-b-other", Adapter: "claude-code", Status: StatusStopped, LastActivity: &at},
		},
	}}
	codex := &homeAdapter{name: "codex", byHome: map[string][]Session{}}
	ended := at.Add(time.Minute)
	zero := 0
	newEnv := func() *Env {
		env := &Env{Home: "/a", Getenv: func(k string) string { return map[string]string{"HOME": "/a"}[k] },
			Procs: &proc.Fake{Boot: "boot-1"}, Now: func() time.Time { return at.Add(time.Hour) }}
		env.Launches = []meta.Launch{
			{ID: "l-b", Kind: "launch", Adapter: "claude-code", SessionID: "s-b", Home: "/b", LaunchedAt: at, EndedAt: &ended, ExitCode: &zero},
			{ID: "l-a", Kind: "launch", Adapter: "claude-code", SessionID: "s-a", LaunchedAt: at, EndedAt: &ended, ExitCode: &zero},
		}
		return env
	}
	check := func(name string, ss []Session) {
		t.Helper()
		var b *Session
		for i := range ss {
			switch ss[i].ID {
			case "s-b":
				b = &ss[i]
			case "s-b-other":
				t.Errorf("%s: a session of /b no record names is listed: %+v", name, ss[i])
			}
		}
		if b == nil || b.Model != "model-b" || b.LaunchID != "l-b" || b.Status != StatusStopped {
			t.Fatalf("%s: the record's session: %+v; want /b's (model-b), launch l-b, stopped", name, b)
		}
	}
	res := All(context.Background(), newEnv(), []Adapter{claude, codex}, time.Second)
	check("All", res.Sessions)
	if len(res.Sessions) != 2 {
		t.Errorf("All: %d sessions, want s-a and s-b: %+v", len(res.Sessions), res.Sessions)
	}
	check("FindAll", FindAll(context.Background(), newEnv(), []Adapter{claude, codex}, time.Second, QueryFor("l-b", newEnv().Launches)).Sessions)
	check("FindFor", FindFor(context.Background(), newEnv(), []Adapter{claude, codex}, time.Second, "s-b").Sessions)
	if len(codex.read) != 3 {
		t.Errorf("codex read %v; want only /a, once per lookup (no record of its own under /b)", codex.read)
	}
	var underB int
	for _, r := range claude.read {
		if r == "/b HOME=/b" {
			underB++
		}
	}
	if underB != 3 {
		t.Errorf("claude-code read %v; want /b (with HOME=/b) once per lookup", claude.read)
	}
}
