package send

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/copilot"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/discover/gemini"
	"github.com/agentctl/agentctl/discover/qwen"
)

// Confirmation reads each agent's transcript as peek does. Over the real
// recordings of Gemini CLI (chat JSONL), Qwen Code (chat JSONL) and Copilot CLI
// (events.jsonl): every user record carries its time and a key of its own, so
// one written after the send confirms it, one older than the send or there
// before it does not (e2e/send_newagents_test.go sends to the live TUIs).
func TestConfirmNewAgentTranscripts(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		a    discover.Adapter
		home string
	}{
		{gemini.New(), "../discover/gemini/testdata/home"},
		{qwen.New(), "../discover/qwen/testdata/home"},
		{copilot.New(), "../discover/copilot/testdata/home"},
	} {
		t.Run(tc.a.Name(), func(t *testing.T) {
			home, err := filepath.Abs(tc.home)
			if err != nil {
				t.Fatal(err)
			}
			env, _ := discovertest.NewWarnEnv(home, map[string]string{"TMPDIR": t.TempDir()}, nil, now)
			checked := 0
			for _, s := range discovertest.DiscoverAll(t, tc.a, env) {
				msgs, err := tc.a.Peek(context.Background(), env, s, 50)
				if err != nil {
					continue // nothing to show (a rolled-back one-shot)
				}
				keys := map[string]bool{}
				var last discover.Message
				for _, m := range msgs {
					if m.Kind != "user" {
						continue
					}
					if m.TS.IsZero() {
						t.Errorf("%s: a user record without a time: %+v", s.ID, m)
					}
					if keys[Key(m)] {
						t.Errorf("%s: two user records share the key %s", s.ID, Key(m))
					}
					keys[Key(m)] = true
					last = m
				}
				if last.Text == "" {
					continue
				}
				checked++
				if got, ok := Recorded(msgs, last.Text, nil, last.TS.Add(-time.Second)); !ok || Key(got) != Key(last) {
					t.Errorf("%s: the user record %q written after the send did not confirm it (got %+v, %v)", s.ID, last.Text, got, ok)
				}
				if got, ok := Recorded(msgs, last.Text, nil, last.TS.Add(2*time.Second)); ok && Key(got) == Key(last) {
					t.Errorf("%s: a user record older than the send confirmed it: %+v", s.ID, got)
				}
				if got, ok := Recorded(msgs, last.Text, Earlier(msgs, last.Text), last.TS.Add(-time.Second)); ok {
					t.Errorf("%s: a user record there before the send confirmed it: %+v", s.ID, got)
				}
			}
			if checked == 0 {
				t.Fatalf("no session with a user record in %s", tc.home)
			}
		})
	}
}
