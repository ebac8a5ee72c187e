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
