package claude

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/meta"
)

func TestPriceLookup(t *testing.T) {
	cfg := &meta.Config{Prices: map[string]meta.Price{
		"claude-opus-4-8-custom": {Input: 1, Output: 2},
		"claude-opus-5":          {Input: 4, Output: 20},
	}}
	tbl := newPriceTable(cfg)
	tests := []struct {
		model string
		want  meta.Price
		ok    bool
	}{
		{"claude-opus-4-8", meta.Price{Input: 5, Output: 25}, true},
		{"claude-opus-4-8[1m]", meta.Price{Input: 5, Output: 25}, true}, // stream-json init spelling
		{"claude-opus-4-8-custom-x", meta.Price{Input: 1, Output: 2}, true},
		{"claude-opus-4-1-20250805", meta.Price{Input: 15, Output: 75}, true},
		{"claude-opus-4-20250514", meta.Price{Input: 15, Output: 75}, true},
		{"claude-sonnet-4-5-20250929", meta.Price{Input: 3, Output: 15}, true},
		{"claude-haiku-4-5", meta.Price{Input: 1, Output: 5}, true},
		{"claude-3-5-haiku-20241022", meta.Price{Input: 0.8, Output: 4}, true},
		{"claude-opus-5-5", meta.Price{Input: 4, Output: 20, CacheWrite: 5, CacheRead: 0.2}, true},
		{"gpt-5", meta.Price{}, false},
	}
	for _, tt := range tests {
		got, ok := tbl.Lookup(tt.model)
		if ok != tt.ok || got != tt.want {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v, %v", tt.model, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := newPriceTable(nil).Lookup("claude-opus-9-9"); ok {
		t.Error("claude-opus-9-9 has a built-in price")
	}
}

func TestCost(t *testing.T) {
	tbl := newPriceTable(nil)
	tests := []struct {
		name    string
		usage   []modelUsage
		want    float64
		unknown []string
	}{
		// 2.1.197's own total_cost_usd for 14/84/200/2000 (docs/agents/claude-code.md §3.2).
		{"opus-4-8 verified", []modelUsage{{"claude-opus-4-8", tokenCounts{In: 14, Out: 84, CW5m: 200, CR: 2000}, 0}}, 0.00442, nil},
		// result.total_cost_usd of the 75098152 capture: 20 in / 10 out.
		{"fixture 75098152", []modelUsage{{"claude-opus-4-8", tokenCounts{In: 20, Out: 10}, 0}}, 0.00035, nil},
		{"1h cache write is 2x input", []modelUsage{{"claude-haiku-4-5", tokenCounts{CW1h: 1_000_000}, 0}}, 2, nil},
		// Claude Code 2.1.329's own costUSD (modelUsage, list price) for a million
		// tokens of each class, measured against the e2e stub.
		{"opus-5-5 input", []modelUsage{{"claude-opus-5-5", tokenCounts{In: 1_000_000}, 0}}, 4, nil},
		{"opus-5-5 output", []modelUsage{{"claude-opus-5-5", tokenCounts{Out: 1_000_000}, 0}}, 20, nil},
		{"opus-5-5 cache write 5m", []modelUsage{{"claude-opus-5-5", tokenCounts{CW5m: 1_000_000}, 0}}, 5, nil},
		{"opus-5-5 cache read", []modelUsage{{"claude-opus-5-5", tokenCounts{CR: 1_000_000}, 0}}, 0.2, nil},
		// The ff38fc66 fixture: 2.1.329's result.total_cost_usd for 20 in / 10 out.
		{"fixture ff38fc66", []modelUsage{{"claude-opus-5-5", tokenCounts{In: 20, Out: 10}, 0}}, 0.00028, nil},
		{"unknown model", []modelUsage{{"claude-opus-9-9", tokenCounts{In: 10, Out: 5}, 0}}, 0, []string{"claude-opus-9-9"}},
		{"unknown model without tokens costs nothing", []modelUsage{{"claude-opus-9-9", tokenCounts{}, 0}}, 0, nil},
	}
	for _, tt := range tests {
		got, unknown := tbl.cost(tt.usage)
		if d := got - tt.want; d > 1e-12 || d < -1e-12 {
			t.Errorf("%s: cost = %v, want %v", tt.name, got, tt.want)
		}
		if diff := cmp.Diff(tt.unknown, unknown); diff != "" {
			t.Errorf("%s: unknown models (-want +got):\n%s", tt.name, diff)
		}
	}
}
