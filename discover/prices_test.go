package discover

import (
	"testing"

	"github.com/agentctl/agentctl/meta"
)

func TestPricesMatchingRule(t *testing.T) {
	family := meta.Price{Input: 1}
	exact := meta.Price{Input: 2}
	bare := meta.Price{Input: 3}
	provider := meta.Price{Input: 4}
	tbl := NewPrices(map[string]meta.Price{"gpt-4": family, "gpt-4o-mini": exact}, &meta.Config{Prices: map[string]meta.Price{
		"gpt-4o":          bare,
		"openai/gpt-4o-x": provider,
		"tagged[1m]":      exact,
	}})
	tests := []struct {
		model string
		want  meta.Price
		ok    bool
	}{
		{"gpt-4o-mini", exact, true},
		{"gpt-4o-2024", bare, true},              // longest prefix
		{"gpt-4-turbo", family, true},            // family prefix
		{"openai/gpt-4o", bare, true},            // without the provider
		{"openai/gpt-4o-x", provider, true},      // as recorded, first
		{"openai/gpt-4o-mini-2025", exact, true}, // longest prefix of the bare id
		{"tagged", exact, true},                  // the key's tag is dropped too
		{"gpt-4o[1m]", bare, true},               // and the model's
		{"claude-x", meta.Price{}, false},
		{"gpt-4o-mini", exact, true}, // remembered
	}
	for _, tt := range tests {
		got, ok := tbl.Lookup(tt.model)
		if ok != tt.ok || got != tt.want {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v, %v", tt.model, got, ok, tt.want, tt.ok)
		}
	}
	if !NewPrices(nil, nil).Empty() || tbl.Empty() {
		t.Error("Empty is wrong")
	}
}

// TestCostRule pins the one cost_usd rule every adapter applies.
func TestCostRule(t *testing.T) {
	some := Tokens{Input: 10, Output: 5}
	tests := []struct {
		name     string
		agent    float64
		tokens   Tokens
		est      float64
		priced   bool
		want     *float64
		wantFrom string
	}{
		{"agent figure wins over an estimate", 0.5, some, 0.7, true, ptr(0.5), "agent"},
		{"agent 0 with tokens is no price: estimate", 0, some, 0.7, true, ptr(0.7), "estimate"},
		{"agent 0, no price: unknown", 0, some, 0, false, nil, ""},
		{"configured price 0 is a real 0", 0, some, 0, true, ptr(0.0), "estimate"},
		{"zero tokens: absent, never 0", 0, Tokens{}, 0, true, nil, ""},
		{"agent figure without token counts", 0.25, Tokens{}, 0, false, ptr(0.25), "agent"},
	}
	for _, tt := range tests {
		got, from := Cost(tt.agent, tt.tokens, tt.est, tt.priced)
		if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) || from != tt.wantFrom {
			t.Errorf("%s: got %v %q, want %v %q", tt.name, deref(got), from, deref(tt.want), tt.wantFrom)
		}
	}
}

func ptr(f float64) *float64 { return &f }

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}
