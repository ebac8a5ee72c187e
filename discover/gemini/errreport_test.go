package gemini

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
)

const (
	idAuth  = "cd13c771-eff6-4806-9e31-953fc91f4fd5" // 401 UNAUTHENTICATED
	idQuota = "0c3592c6-1762-40c6-bf54-4dcb0195a9bb" // 429 with a per-day QuotaFailure
)

// testdata/failed holds two real headless runs of Gemini CLI 0.61.0 against
// a local stub answering 401 and 429 (GEMINI_CLI_HOME=/tmp/gemh,
// TMPDIR=/tmp/gemtmp): the sessions roll the prompt back and say nothing of
// the error; the reports in the temp dir do.
func failedEnv(t *testing.T, rewrite bool) *discover.Env {
	t.Helper()
	return failedEnvIn(t, t.TempDir(), rewrite)
}

func failedEnvIn(t *testing.T, dir string, rewrite bool) *discover.Env {
	t.Helper()
	home := filepath.Join(dir, "home")
	discovertest.CopyTree(t, "testdata/failed/home", home)
	newPath := "/tmp/gemh"
	if rewrite {
		newPath = home // the reports then name this copy's project dirs
	}
	copyTreeReplacing(t, "testdata/failed/tmpdir", filepath.Join(dir, "tmp"), "/tmp/gemh", newPath)
	env, _ := testEnv(t, home, map[string]string{"TMPDIR": filepath.Join(dir, "tmp")})
	return env
}

func TestFailedTurnErrorReport(t *testing.T) {
	got := discoverAll(t, failedEnv(t, true))
	for id, want := range map[string]string{idAuth: discover.BlockedAuth, idQuota: discover.BlockedQuota} {
		s, ok := got[id]
		if !ok {
			t.Fatalf("session %s missing (got %d)", id, len(got))
		}
		if s.Status != discover.StatusFailed || s.BlockedReason != want || !strings.Contains(s.EvidenceDetail, "gemini-client-error-") {
			t.Errorf("%s: status %s blocked %q detail %q, want failed %s from the report", id, s.Status, s.BlockedReason, s.EvidenceDetail, want)
		}
		if s.Model != "" || s.Tokens == nil || !s.Tokens.Zero() {
			t.Errorf("%s: model %q tokens %+v, want none", id, s.Model, s.Tokens)
		}
	}
}

// The reason comes from the report's message, never from its path: a temp
// dir whose random name held "429" once made a 401 read as quota.
func TestErrorReportPathIsNotTheReason(t *testing.T) {
	got := discoverAll(t, failedEnvIn(t, filepath.Join(t.TempDir(), "run4294148670"), true))
	if s := got[idAuth]; s.BlockedReason != discover.BlockedAuth || !strings.Contains(s.EvidenceDetail, "run4294148670") {
		t.Errorf("%s: blocked %q detail %q; want auth from the report's 401, the path in the detail", idAuth, s.BlockedReason, s.EvidenceDetail)
	}
}

// Reports of another home's projects (or none at all) say nothing about these
// sessions: failed, with no reason rather than a guessed one.
func TestFailedTurnForeignReport(t *testing.T) {
	for name, env := range map[string]*discover.Env{
		"other project dir": failedEnv(t, false),
		"no reports":        func() *discover.Env { e, _ := testEnv(t, "testdata/failed/home", nil); return e }(),
	} {
		for id, s := range discoverAll(t, env) {
			if s.Status != discover.StatusFailed || s.BlockedReason != "" {
				t.Errorf("%s: %s: status %s blocked %q, want failed without a reason", name, id, s.Status, s.BlockedReason)
			}
		}
	}
}

// The temp dir is shared: a matching report another user wrote (planted in
// /tmp) gives no reason.
func TestFailedTurnReportOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another uid")
	}
	env := failedEnv(t, true)
	reports, _ := filepath.Glob(filepath.Join(env.Getenv("TMPDIR"), "gemini-client-error-*"))
	if len(reports) == 0 {
		t.Fatal("no reports in the test's temp dir")
	}
	for _, r := range reports {
		if err := os.Lchown(r, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	for id, s := range discoverAll(t, env) {
		if s.Status != discover.StatusFailed || s.BlockedReason != "" {
			t.Errorf("%s: status %s blocked %q from another user's report, want failed without a reason", id, s.Status, s.BlockedReason)
		}
	}
}

// A report matches only the prompt that was rolled back.
func TestParseReportPromptMustMatch(t *testing.T) {
	rep := []byte(`{"error":{"message":"429 quota"},"context":[{"role":"user","parts":[{"text":"<session_context>\nThe project's temporary directory is: /h/.gemini/tmp/p\n</session_context>"}]},{"role":"user","parts":[{"text":"do it"}]}]}`)
	if _, ok := parseReport(rep, failedTurn{Prompt: "do it", ProjectDir: "/h/.gemini/tmp/p"}); !ok {
		t.Error("matching report not matched")
	}
	if _, ok := parseReport(rep, failedTurn{Prompt: "something else", ProjectDir: "/h/.gemini/tmp/p"}); ok {
		t.Error("report of another prompt matched")
	}
	if _, ok := parseReport(rep, failedTurn{Prompt: "do it", ProjectDir: "/h/.gemini/tmp/p2"}); ok {
		t.Error("report of another project matched")
	}
}
