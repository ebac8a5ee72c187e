package launch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/meta"
)

// One planning function for every kind of launch: what each slot gets.
func TestPlanSlots(t *testing.T) {
	dir := workdir(t)
	codex, err := filepath.Abs("testdata/fake-codex")
	if err != nil {
		t.Fatal(err)
	}
	l := &Launcher{Deps: &Deps{Config: &meta.Config{},
		Environ: []string{"AGENTCTL_CLAUDE_BIN=" + fakeBin(t), "AGENTCTL_CODEX_BIN=" + codex, "HOME=" + t.TempDir(), "PATH=/usr/bin"}}, Euid: 1000}
	hour := meta.Budget{MaxDurationSeconds: 3600}
	type slot struct {
		Adapter, Model, Cwd, Prompt, Summary, Kind string
		Background                                 bool
		Budget                                     *meta.Budget
	}
	for _, tc := range []struct {
		name string
		ask  Ask
		want []slot
	}{
		{"single: the default adapter with the flags' model",
			Ask{DefaultAdapter: "claude-code", Cwd: dir, Agent: Spec{Model: "m"}, Prompt: PromptInput{Prompt: "hi"}},
			[]slot{{Adapter: "claude-code", Model: "m", Cwd: dir, Prompt: "hi", Summary: "hi"}}},
		{"single: config's model goes with config's adapter",
			Ask{Slots: []Slot{{Adapter: "codex"}}, DefaultAdapter: "claude-code", ConfigAdapter: "codex", ConfigModel: "gpt-x",
				Cwd: dir, Background: true, Prompt: PromptInput{Prompt: "hi"}},
			nil}, // --background is claude-code's: Plan refuses it for codex
		{"single: config's model goes with config's adapter, no background",
			Ask{Slots: []Slot{{Adapter: "codex"}}, DefaultAdapter: "claude-code", ConfigAdapter: "codex", ConfigModel: "gpt-x",
				Cwd: dir, Prompt: PromptInput{Prompt: "hi"}},
			[]slot{{Adapter: "codex", Model: "gpt-x", Cwd: dir, Prompt: "hi", Summary: "hi"}}},
		{"group: a model binds to its slot only; the default adapter fills in",
			Ask{Slots: []Slot{{Adapter: "claude-code", Model: "a"}, {}, {Adapter: "codex"}}, DefaultAdapter: "claude-code",
				Cwd: dir, Agent: Spec{Model: "loose"}, Prompt: PromptInput{Prompt: "hi"}},
			[]slot{{Adapter: "claude-code", Model: "a", Cwd: dir, Prompt: "hi", Summary: "hi"},
				{Adapter: "claude-code", Cwd: dir, Prompt: "hi", Summary: "hi"},
				{Adapter: "codex", Cwd: dir, Prompt: "hi", Summary: "hi"}}},
		{"matrix: one slot is still a group; its own budget wins over the flags'",
			Ask{Slots: []Slot{{Adapter: "codex", Model: "o3", Budget: &hour}}, Matrix: true, Cwd: dir,
				Agent: Spec{Budget: &meta.Budget{MaxDurationSeconds: 60, MaxTokens: 5}}, Prompt: PromptInput{Prompt: "hi"}},
			[]slot{{Adapter: "codex", Model: "o3", Cwd: dir, Prompt: "hi", Summary: "hi", Budget: &meta.Budget{MaxDurationSeconds: 3600, MaxTokens: 5}}}},
		{"resume: the session's adapter, in the session's directory",
			Ask{Slots: []Slot{{Adapter: "claude-code"}}, Cwd: "/elsewhere",
				Agent: Spec{Kind: KindResume, SessionID: "491a4bda-0000-4000-8000-000000000000", Cwd: dir}, Prompt: PromptInput{Prompt: "more"}},
			[]slot{{Adapter: "claude-code", Cwd: dir, Prompt: "more", Summary: "more", Kind: KindResume}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := l.PlanSlots(context.Background(), tc.ask)
			if tc.want == nil {
				if err == nil {
					t.Fatal("planned; want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []slot
			for _, p := range ps {
				sp := p.Spec
				got = append(got, slot{sp.Adapter, sp.Model, sp.Cwd, sp.Prompt, sp.Summary, sp.Kind, sp.Background, sp.Budget})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("slots (-want +got):\n%s", diff)
			}
		})
	}
}

// A relative --spec is recorded absolute by every kind of launch; errors of
// a group name the slot.
func TestPlanSlotsSpecPathAndSlotErrors(t *testing.T) {
	dir := workdir(t)
	l := &Launcher{Deps: &Deps{Config: &meta.Config{}, Environ: []string{"AGENTCTL_CLAUDE_BIN=" + fakeBin(t), "PATH=/usr/bin"}}, Euid: 1000}
	t.Chdir(dir)
	os.WriteFile("spec.md", []byte("the spec\n"), 0o644)
	for _, slots := range [][]Slot{nil, {{Adapter: "claude-code", Model: "a"}, {Adapter: "claude-code", Model: "b"}}} {
		ps, err := l.PlanSlots(context.Background(), Ask{Slots: slots, DefaultAdapter: "claude-code",
			Prompt: PromptInput{Prompt: "hi", Spec: "spec.md"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if want := filepath.Join(dir, "spec.md"); p.Spec.SpecPath != want {
				t.Errorf("%d slots: spec path %q, want %q", len(ps), p.Spec.SpecPath, want)
			}
			if !strings.HasPrefix(p.Spec.Prompt, "--- File: spec.md ---\nthe spec\n") {
				t.Errorf("prompt %q", p.Spec.Prompt)
			}
		}
	}
	_, err := l.PlanSlots(context.Background(), Ask{Slots: []Slot{{Adapter: "claude-code"}, {Adapter: "nosuch"}}, Prompt: PromptInput{Prompt: "hi"}})
	var ie *InputError
	if !errors.As(err, &ie) || err.Error() != `slot 2: unknown adapter "nosuch"; known adapters: claude-code, codex, opencode, pi, pi-rust, openclaw, gemini, qwen-code, copilot; nothing was launched` {
		t.Errorf("unknown adapter in a group: %v", err)
	}
	_, err = l.PlanSlots(context.Background(), Ask{Slots: []Slot{{Adapter: "claude-code"}, {Adapter: "openclaw"}}, Prompt: PromptInput{Prompt: "hi"}})
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "slot 2: openclaw") {
		t.Errorf("openclaw in a group: %v", err)
	}
}

// The summary is the prompt as typed, or the composed prompt when that is
// blank, never longer than SummaryMax and never cut inside a character.
func TestSummary(t *testing.T) {
	if got := Summary(" \n", "## GitHub Issue #7: t\n\nbody"); got != "## GitHub Issue #7: t\n\nbody" {
		t.Errorf("blank prompt: summary %q", got)
	}
	if got := Summary("fix it", "--- File: a ---\n…\nfix it"); got != "fix it" {
		t.Errorf("summary %q", got)
	}
	long := strings.Repeat("é", SummaryMax) // 2 bytes each
	if got := Summary(long, ""); len(got) != SummaryMax || !strings.HasSuffix(got, "é") {
		t.Errorf("long summary: %d bytes, ends %q", len(got), got[len(got)-2:])
	}
}
