package launch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuildPrompt(t *testing.T) {
	cwd := t.TempDir()
	cwd, _ = filepath.EvalSymlinks(cwd)
	write := func(name, content string) string {
		p := filepath.Join(cwd, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	spec := write("docs/spec.md", "the spec\n")
	a := write("src/a.go", "package a\n")
	got, err := BuildPrompt(context.Background(), PromptInput{Prompt: "do it", Files: []string{a}, Spec: spec, Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	want := "--- File: docs/spec.md ---\nthe spec\n--- End File ---\n--- File: src/a.go ---\npackage a\n--- End File ---\n\ndo it"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("prompt (-want +got):\n%s", diff)
	}

	gh := func(_ context.Context, dir string, args ...string) ([]byte, error) {
		if diff := cmp.Diff([]string{"issue", "view", "42", "--json", "title,body", "--repo", "acme/api"}, args); diff != "" {
			t.Errorf("gh args (-want +got):\n%s", diff)
		}
		return []byte(`{"title":"Crash on save","body":"It crashes.\n"}`), nil
	}
	got, err = BuildPrompt(context.Background(), PromptInput{Issue: "42", Repo: "acme/api", Cwd: cwd, GH: gh})
	if err != nil {
		t.Fatal(err)
	}
	if want := "## GitHub Issue #42: Crash on save\n\nIt crashes.\n\n---\n\n"; got != want {
		t.Errorf("issue alone:\n got %q\nwant %q", got, want)
	}
	got, _ = BuildPrompt(context.Background(), PromptInput{Prompt: "fix it", Issue: "42", Repo: "acme/api", Files: []string{a}, Cwd: cwd, GH: gh})
	if !strings.HasPrefix(got, "## GitHub Issue #42") || !strings.HasSuffix(got, "--- End File ---\n\nfix it") {
		t.Errorf("issue + file + prompt: %q", got)
	}
}

func TestBuildPromptErrors(t *testing.T) {
	cwd := t.TempDir()
	big := filepath.Join(cwd, "big.txt")
	os.WriteFile(big, []byte(strings.Repeat("x", 100)), 0o600)
	bin := filepath.Join(cwd, "blob.bin")
	os.WriteFile(bin, []byte("ab\x00cd"), 0o600)
	latin1 := filepath.Join(cwd, "latin1.txt")
	os.WriteFile(latin1, []byte("caf\xe9"), 0o600)
	unreadable := filepath.Join(cwd, "secret.txt")
	os.WriteFile(unreadable, []byte("x"), 0o000)
	cases := []struct {
		name string
		in   PromptInput
		want string
	}{
		{"no prompt", PromptInput{Prompt: "  "}, "missing prompt: pass -p"},
		{"missing file", PromptInput{Prompt: "p", Files: []string{filepath.Join(cwd, "nope.txt")}}, "--file " + filepath.Join(cwd, "nope.txt") + ": no such file"},
		{"oversize", PromptInput{Prompt: "p", Files: []string{big}, MaxFileSize: 50}, "--file " + big + ": larger than --max-file-size 50"},
		{"binary", PromptInput{Prompt: "p", Files: []string{bin}}, "--file " + bin + ": binary file"},
		{"not utf-8", PromptInput{Prompt: "p", Files: []string{latin1}}, "--file " + latin1 + ": binary file"},
		{"directory", PromptInput{Prompt: "p", Spec: cwd}, "--spec " + cwd + ": is a directory"},
		{"bad issue", PromptInput{Issue: "abc"}, `--issue "abc": want an issue number`},
	}
	if os.Geteuid() != 0 { // root reads mode-000 files
		cases = append(cases, struct {
			name string
			in   PromptInput
			want string
		}{"unreadable", PromptInput{Prompt: "p", Files: []string{unreadable}}, "--file " + unreadable + ": permission denied"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := BuildPrompt(context.Background(), c.in)
			var ie *InputError
			if !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("err = %v, want an input error starting %q", err, c.want)
			}
		})
	}
}

func TestGHMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := BuildPrompt(context.Background(), PromptInput{Issue: "7"})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "GitHub CLI `gh`") {
		t.Errorf("err = %v", err)
	}
}
