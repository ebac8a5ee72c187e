package launch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAssignSuffixes(t *testing.T) {
	slots := []Slot{
		{Adapter: "claude-code", Model: "claude-opus-4-6"},
		{Adapter: "claude-code", Model: "anthropic/claude-sonnet-4-5"},
		{Adapter: "codex"},
		{Adapter: "pi-rust"},
		{Adapter: "opencode", Model: "m"},
		{Adapter: "opencode", Model: "M"},
		{Adapter: "opencode", Model: "m"},
	}
	AssignSuffixes(slots)
	want := []string{"cc-opus-4-6", "cc-sonnet-4-5", "codex", "pi-rs", "opencode-m", "opencode-m-2", "opencode-m-3"}
	for i, s := range slots {
		if s.Suffix != want[i] {
			t.Errorf("slot %d: suffix %q, want %q", i, s.Suffix, want[i])
		}
	}
}

func TestReadMatrix(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	m, slots, err := ReadMatrix(write("ok.yaml", "prompt: p\ncwd: sub\nbase_branch: main\nmatrix:\n  - adapter: claude-code\n    model: [a, b]\n  - adapter: codex\n    model: gpt\n  - adapter: pi\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Cwd != filepath.Join(dir, "sub") || m.BaseBranch != "main" || m.Prompt != "p" {
		t.Errorf("matrix %+v", m)
	}
	if len(slots) != 4 || slots[1] != (Slot{Adapter: "claude-code", Model: "b"}) || slots[2].Model != "gpt" || slots[3].Model != "" {
		t.Errorf("slots %+v", slots)
	}
	_, slots, err = ReadMatrix(write("bg.yaml", "prompt: p\nmatrix:\n  - adapter: claude-code\n    model: [a, b]\n    background: true\n  - adapter: claude-code\n"), nil)
	if err != nil || len(slots) != 3 || !slots[0].Background || !slots[1].Background || slots[2].Background {
		t.Errorf("background slots %+v (%v): want the first entry's two slots background, the other not", slots, err)
	}
	for name, tc := range map[string]struct{ body, want string }{
		"unknown":  {"prompt: p\nmatrix:\n  - adapter: codex\n    modle: x\n", `line 4: unknown key "modle"`},
		"top":      {"promt: p\nmatrix:\n  - adapter: codex\n", `line 1: unknown key "promt"`},
		"empty":    {"", "empty file"},
		"nolist":   {"prompt: p\n", "matrix list is empty"},
		"wrong":    {"matrix:\n  - adapter: codex\n    model: {a: 1}\n", "line 3: model: want a model name or a list"},
		"nested":   {"matrix:\n  - adapter: codex\n    model: [[a]]\n", "line 3: model: want a model name or a list"},
		"noadapt":  {"matrix:\n  - model: a\n", "matrix entry 1 has no adapter"},
		"notalist": {"matrix: codex\n", "--matrix"},
		"bgcodex":  {"matrix:\n  - adapter: codex\n    background: true\n", "background: true is for claude-code"},
	} {
		_, _, err := ReadMatrix(write(name+".yaml", tc.body), nil)
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want one line containing %q", name, err, tc.want)
		}
	}
}

func TestForkClaudeOnly(t *testing.T) {
	r := planReq(t)
	r.Kind, r.SessionID, r.Fork = KindResume, "491a4bda-0000-4000-8000-000000000000", true
	p, err := Claude{}.Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Args, " "); !strings.HasSuffix(got, "--resume "+r.SessionID+" --fork-session") {
		t.Errorf("fork argv %q", got)
	}
	if err := CanFork("claude-code"); err != nil {
		t.Error(err)
	}
	for _, a := range []string{"codex", "opencode", "pi", "pi-rust", "openclaw"} {
		if err := CanFork(a); err == nil || !strings.Contains(err.Error(), "cannot fork") {
			t.Errorf("%s: CanFork = %v", a, err)
		}
	}
}
