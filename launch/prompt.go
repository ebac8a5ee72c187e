package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultMaxFileSize is --max-file-size's default (bytes per --file/--spec).
const DefaultMaxFileSize = 51200

// PromptInput is everything a prompt is composed from (README "Commands", launch).
type PromptInput struct {
	Prompt      string
	Files       []string
	Spec        string
	MaxFileSize int64
	Issue       string // issue number
	Repo        string // owner/repo for --issue
	Cwd         string // the launch cwd: block paths are shown relative to it
	// GH runs `gh` (nil: exec from $PATH).
	GH func(ctx context.Context, dir string, args ...string) ([]byte, error)
}

// InputError is a bad input the user must fix (exit 2).
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func inputErrorf(format string, args ...any) error { return &InputError{fmt.Sprintf(format, args...)} }

// BuildPrompt composes the prompt: the GitHub issue (if any), then one block per
// --spec/--file (spec first), a blank line, then the prompt. Every file problem is
// an error naming the file.
func BuildPrompt(ctx context.Context, in PromptInput) (string, error) {
	if in.MaxFileSize <= 0 {
		in.MaxFileSize = DefaultMaxFileSize
	}
	if strings.TrimSpace(in.Prompt) == "" && in.Issue == "" {
		return "", inputErrorf("missing prompt: pass -p PROMPT (or --issue N)")
	}
	var blocks []string
	paths := in.Files
	if in.Spec != "" {
		paths = append([]string{in.Spec}, paths...)
	}
	for i, p := range paths {
		flag := "--file"
		if in.Spec != "" && i == 0 {
			flag = "--spec"
		}
		b, err := readTextFile(p, in.MaxFileSize)
		if err != nil {
			return "", inputErrorf("%s %s: %v", flag, p, err)
		}
		blocks = append(blocks, fmt.Sprintf("--- File: %s ---\n%s\n--- End File ---", relTo(in.Cwd, p), strings.TrimSuffix(string(b), "\n")))
	}
	var out strings.Builder
	if in.Issue != "" {
		title, body, err := fetchIssue(ctx, in)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&out, "## GitHub Issue #%s: %s\n\n%s\n\n---\n\n", in.Issue, title, strings.TrimRight(body, "\n"))
	}
	if len(blocks) > 0 {
		out.WriteString(strings.Join(blocks, "\n"))
		out.WriteString("\n\n")
	}
	out.WriteString(in.Prompt)
	return out.String(), nil
}

// readTextFile reads at most max bytes of a text file; larger or binary files are
// refused rather than cut (a cut file would silently mislead the agent).
func readTextFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err
		}
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, errors.New("is a directory; pass files")
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("larger than --max-file-size %d bytes (%d bytes); attach a smaller file or raise --max-file-size", max, st.Size())
	}
	if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
		return nil, errors.New("binary file; only text files can be attached")
	}
	return b, nil
}

// relTo shows path relative to the launch cwd.
func relTo(cwd, path string) string {
	abs, err := filepath.Abs(path)
	if err != nil || cwd == "" {
		return path
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	rel, err := filepath.Rel(cwd, abs)
	if err != nil {
		return abs
	}
	return rel
}

// ValidIssue checks an --issue argument.
func ValidIssue(n string) error {
	v, err := strconv.Atoi(strings.TrimPrefix(n, "#"))
	if err != nil || v <= 0 {
		return inputErrorf("--issue %q: want an issue number such as 42", n)
	}
	return nil
}

func fetchIssue(ctx context.Context, in PromptInput) (title, body string, err error) {
	n := strings.TrimPrefix(in.Issue, "#")
	if err := ValidIssue(n); err != nil {
		return "", "", err
	}
	args := []string{"issue", "view", n, "--json", "title,body"}
	if in.Repo != "" {
		args = append(args, "--repo", in.Repo)
	}
	gh := in.GH
	if gh == nil {
		gh = runGH
	}
	out, err := gh(ctx, in.Cwd, args...)
	if err != nil {
		return "", "", err
	}
	var v struct{ Title, Body string }
	if err := json.Unmarshal(out, &v); err != nil {
		return "", "", fmt.Errorf("gh issue view %s: unexpected output: %v", n, err)
	}
	return v.Title, v.Body, nil
}

func runGH(ctx context.Context, dir string, args ...string) ([]byte, error) {
	bin, err := exec.LookPath("gh")
	if err != nil {
		return nil, inputErrorf("--issue needs the GitHub CLI `gh` on $PATH (https://cli.github.com), logged in with `gh auth login`; or paste the issue with -p")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("gh %s: %s", strings.Join(args[:3], " "), msg)
	}
	return out, nil
}
