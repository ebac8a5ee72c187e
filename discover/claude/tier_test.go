package claude

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPriceTiers are worked examples of the request-level price rules.
//
// Long context (claude-sonnet-4-5, $3 in / $15 out, cache read 0.1×, 5m write
// 1.25×): r1's prompt is 1000 + 150000 = 151000 tokens, standard:
// (1000·3 + 150000·0.3 + 2000·15) / 1e6 = 0.078. r2's is 5000 + 190000 + 10000 =
// 205000 > 200000, so all of r2 is billed at 2× input and 1.5× output:
// (2·(5000·3 + 190000·0.3 + 10000·3.75) + 1.5·4000·15) / 1e6 = 0.309. r3's
// prompt is exactly 200000: standard, 200000·0.3 / 1e6 = 0.06.
//
// Fast mode (claude-opus-4-6 $5/$25, usage.speed "fast"): 6× every class:
// 6·(100·5 + 1000·25) / 1e6 = 0.153.
func TestPriceTiers(t *testing.T) {
	const sid, cwd = idA, "/w"
	ts := func(s string) string { return "2026-11-20T21:00:" + s + ".000Z" }
	usage := func(in, out, cw, cr int, speed string) string {
		u := usageJSON(in, out, cw, cr)
		if speed != "" {
			u = u[:len(u)-1] + `,"speed":"` + speed + `"}`
		}
		return u
	}
	tests := []struct {
		name   string
		lines  []string
		want   float64
		models []string
	}{
		{"long context per request", []string{
			assistantLine(sid, cwd, ts("01"), "m1", "r1", "claude-sonnet-4-5", textBlock("a"), "end_turn", usage(1000, 2000, 0, 150000, "")),
			assistantLine(sid, cwd, ts("02"), "m2", "r2", "claude-sonnet-4-5", textBlock("b"), "end_turn", usage(5000, 4000, 10000, 190000, "")),
			assistantLine(sid, cwd, ts("03"), "m3", "r3", "claude-sonnet-4-5", textBlock("c"), "end_turn", usage(0, 0, 0, 200000, "")),
		}, 0.078 + 0.309 + 0.06, []string{"claude-sonnet-4-5"}},
		{"fast mode", []string{
			assistantLine(sid, cwd, ts("01"), "m1", "r1", "claude-opus-4-6", textBlock("a"), "end_turn", usage(100, 1000, 0, 0, "fast")),
		}, 0.153, []string{"claude-opus-4-6"}},
		{"standard speed is not fast", []string{
			assistantLine(sid, cwd, ts("01"), "m1", "r1", "claude-opus-4-6", textBlock("a"), "end_turn", usage(100, 1000, 0, 0, "standard")),
		}, 0.153 / 6, []string{"claude-opus-4-6"}},
		{"a streamed reply keeps its last line's tier", []string{
			assistantLine(sid, cwd, ts("01"), "m1", "r1", "claude-sonnet-4-5", textBlock("a"), "", usage(5000, 1, 10000, 190000, "")),
			assistantLine(sid, cwd, ts("02"), "m1", "r1", "claude-sonnet-4-5", textBlock("b"), "end_turn", usage(5000, 4000, 10000, 190000, "")),
		}, 0.309, []string{"claude-sonnet-4-5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeTranscript(t, t.TempDir(), "-w", sid, tt.lines...)
			a := parseWhole(t, p)
			got, unknown := newPriceTable(nil).cost(a.ByModel)
			if len(unknown) != 0 || math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("cost %v (unknown %v), want %v", got, unknown, tt.want)
			}
			if diff := cmp.Diff(tt.models, a.Models()); diff != "" {
				t.Errorf("models (-want +got):\n%s", diff)
			}
		})
	}
}
