package pi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
)

// Issue 19: an assistant usage record with a negative or impossible count is left
// out of the totals entirely (never clamped) and named in a warning; the count of
// such records survives the parse index (warm and after an append).
func TestImpossibleUsageLeftOut(t *testing.T) {
	const id = "01a1faf0-0000-7000-8000-0000000000b1"
	const start = "2026-11-20T21:40:00.000Z"
	good := asstMsg("b0000003", "b0000002", "2026-11-20T21:40:02.000Z", "ok", "stop", 100, 10, costObj(0.25))
	for _, tc := range []struct {
		name    string
		in, out int64
		bad     bool
	}{
		{"valid", 5, 6, false},
		{"negative input", -5, 6, true},
		{"negative output", 5, -1, true},
		{"over 10^9", 1_000_000_001, 6, true},
		{"int64 max", 1<<63 - 1, 6, true},
		{"at 10^9", 1_000_000_000, 6, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			dir := filepath.Join(home, ".pi/agent/sessions/--home-dev-x--")
			p := filepath.Join(dir, "2026-11-20T21-40-00-000Z_"+id+".jsonl")
			discovertest.WriteLines(t, p,
				hdr(id, start, "/home/dev/x"),
				userMsg("b0000002", "", "2026-11-20T21:40:01.000Z", textBlocks("go")),
				good,
				asstMsg("b0000004", "b0000003", "2026-11-20T21:40:03.000Z", "more", "stop", tc.in, tc.out, costObj(1e6)),
			)
			want, wantCost := &discover.Tokens{Input: 100, Output: 10}, 0.25
			if !tc.bad {
				want, wantCost = &discover.Tokens{Input: 100 + tc.in, Output: 10 + tc.out}, 0.25+1e6
			}
			env, warns := testEnv(t, home, nil)
			env.StateDir = t.TempDir()
			check := func(pass string, want *discover.Tokens, bad int) {
				t.Helper()
				*warns = nil
				s := discovertest.DiscoverAll(t, New(), env)[id]
				if diff := cmp.Diff(want, s.Tokens); diff != "" {
					t.Errorf("%s: tokens (-want +got):\n%s", pass, diff)
				}
				if s.CostUSD == nil || *s.CostUSD != wantCost {
					t.Errorf("%s: cost %v, want %v (valid records only)", pass, s.CostUSD, wantCost)
				}
				w := "session " + id + ": "
				if bad > 0 {
					w += string(rune('0'+bad)) + " usage record(s) with a negative or impossible token count left out of its totals"
				}
				got := strings.Join(*warns, "\n")
				if bad > 0 && !strings.Contains(got, w) || bad == 0 && strings.Contains(got, "usage record(s)") {
					t.Errorf("%s: warnings %q, want %d bad record(s) named", pass, *warns, bad)
				}
			}
			bad := 0
			if tc.bad {
				bad = 1
			}
			check("cold", want, bad)
			check("warm", want, bad)
			// Resumed: the index parses only the appended lines, and keeps the count.
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(asstMsg("b0000005", "b0000004", "2026-11-20T21:40:04.000Z", "x", "stop", -7, 1, costObj(3)) + "\n")
			f.Close()
			check("appended", want, bad+1)
		})
	}
}
