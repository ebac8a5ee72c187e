package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// mark remembers where a run's exchanges start in the stub's record, so the
// expected values of one run come from exactly what the stub sent during it.
type mark int

func markNow(srv *stub.Server) mark { return mark(len(srv.Exchanges())) }

// since returns the model exchanges recorded after m.
func since(srv *stub.Server, m mark) []stub.Exchange {
	var out []stub.Exchange
	for _, e := range srv.Exchanges()[m:] {
		if e.Request.API != "" {
			out = append(out, e)
		}
	}
	return out
}

// sent sums the usage of completed responses among exs.
func sent(exs ...[]stub.Exchange) stub.Usage {
	var u stub.Usage
	for _, ex := range exs {
		for _, e := range ex {
			if e.Completed {
				u.Add(e.Usage)
			}
		}
	}
	return u
}

// lastModel is the model of the last completed response among exs (the stub
// echoes the model the agent asked for).
func lastModel(exs ...[]stub.Exchange) string {
	m := ""
	for _, ex := range exs {
		for _, e := range ex {
			if e.Completed && e.Request.Model != "" {
				m = e.Request.Model
			}
		}
	}
	return m
}

// view is the part of a session a test pins; cmp shows every difference at once.
type view struct {
	ID, Adapter, Status, Cwd, Model, Prompt string
	Tokens                                  harness.Tokens
}

func viewOf(s harness.Session) view {
	v := view{ID: s.ID, Adapter: s.Adapter, Status: s.Status, Cwd: s.Cwd, Model: s.Model, Prompt: s.Prompt}
	if s.Tokens != nil {
		v.Tokens = *s.Tokens
	}
	return v
}

func tokens(u stub.Usage) harness.Tokens {
	return harness.Tokens{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite}
}

// checkSession compares what agentctl said about a session with what the agent
// and the stub say it must be.
func checkSession(t *testing.T, what string, got harness.Session, want view) {
	t.Helper()
	if diff := cmp.Diff(want, viewOf(got)); diff != "" {
		t.Errorf("%s: agentctl reports (-want +got):\n%s", what, diff)
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("agent file missing: %v", err)
	}
	return strings.Count(string(b), "\n")
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// waitFile waits up to 30 s for an agent to create path.
func waitFile(t *testing.T, path string) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, func() string {
		if !exists(path) {
			return "no " + filepath.Base(path) + " yet"
		}
		return ""
	})
}
