package claude

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/proc"
)

// Recorded from a real Claude Code 2.1.329 TUI (e2e TestStatusAccuracyClaudeTUI,
// AGENTCTL_ACCURACY_KEEP): its registry entry before the session's first prompt
// (idle, no transcript yet) and history.jsonl once the stub held the prompt's
// model request. Under load the entry still says idle at that moment, for up
// to 1.5 s; history.jsonl can have the prompt before it. Live, such a prompt
// newer than the entry's idle is a turn starting: running (inferred) for at
// most 5 s, naming the prompt; a slash command, an older prompt or no
// history.jsonl leave the entry's idle.
func TestPromptNewerThanIdleRegistry(t *testing.T) {
	const id, pid = "58e8854a-d615-4413-acfa-a7d0da7b379a", 10899
	const promptMs = 1795612697508 // the history.jsonl line's timestamp
	home := t.TempDir()
	for _, f := range []string{"sessions/10899.json", "history.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata/first-prompt/.claude", f))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(home, ".claude", f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a := testAdapter()
	a.MachineID = func() string { return "3d1219c7c4c5404aaa1f6d2a48adfda4" } // the recorded pidDomain's
	procs := &proc.Fake{Procs: []proc.Process{{PID: pid, Comm: "claude", StartTicks: 3229412}}}
	at := func(after time.Duration) discover.Session {
		t.Helper()
		env := newEnv(t, home, procs)
		env.Now = func() time.Time { return time.UnixMilli(promptMs).Add(after) }
		return discovertest.DiscoverAll(t, a, env.Env)[id]
	}
	s := at(time.Second)
	if s.Status != discover.StatusRunning || !s.Inferred || s.PID != pid ||
		!strings.Contains(s.EvidenceDetail, "history.jsonl has a prompt submitted 34.113s after the entry's idle, not registered yet") {
		t.Errorf("1 s after the prompt, entry still idle: %s inferred=%v pid %d (%s); want running (inferred) naming the prompt",
			s.Status, s.Inferred, s.PID, s.EvidenceDetail)
	}
	if s := at(6 * time.Second); s.Status != discover.StatusIdle {
		t.Errorf("6 s after the prompt: %s (%s); want idle (the registry is believed again)", s.Status, s.EvidenceDetail)
	}

	hist := filepath.Join(home, ".claude", "history.jsonl")
	orig, _ := os.ReadFile(hist)
	for name, body := range map[string]string{
		"a slash command":     strings.Replace(string(orig), `"display":"accuracy HOLD=tacc"`, `"display":"/model"`, 1),
		"a bash command":      strings.Replace(string(orig), `"display":"accuracy HOLD=tacc"`, `"display":"!ls"`, 1),
		"another session":     strings.Replace(string(orig), id, "11111111-2222-4333-8444-555555555555", 1),
		"older than the idle": strings.Replace(string(orig), "1795612697508", "1795612663000", 1),
	} {
		os.WriteFile(hist, []byte(body), 0o644)
		if s := at(time.Second); s.Status != discover.StatusIdle {
			t.Errorf("%s in history.jsonl: %s (%s); want idle", name, s.Status, s.EvidenceDetail)
		}
	}
	os.Remove(hist)
	if s := at(time.Second); s.Status != discover.StatusIdle {
		t.Errorf("no history.jsonl: %s (%s); want idle", s.Status, s.EvidenceDetail)
	}

	// A busy entry is believed as it is.
	os.WriteFile(hist, orig, 0o644)
	reg := filepath.Join(home, ".claude", "sessions", "10899.json")
	b, _ := os.ReadFile(reg)
	os.WriteFile(reg, []byte(strings.Replace(string(b), `"status":"idle"`, `"status":"busy"`, 1)), 0o644)
	if s := at(time.Second); s.Status != discover.StatusRunning || s.Inferred {
		t.Errorf("busy entry: %s inferred=%v (%s); want running, proven", s.Status, s.Inferred, s.EvidenceDetail)
	}
}
