package codex

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/meta"
)

// TestTokensAndPrice is the worked example: 10000 input tokens of which 6000
// cached and 1000 written to the cache, 2000 output of which 1500 reasoning.
// Cache writes are part of input_tokens (Codex's non-cached input is input −
// cached), so fresh input is 3000; reasoning is part of output. At gpt-5's
// price (1.25 input, 0.125 cached, 10 output; no cache-write premium):
// (3000·1.25 + 6000·0.125 + 1000·1.25 + 2000·10) / 1e6 = 0.02575 USD.
func TestTokensAndPrice(t *testing.T) {
	u := &usage{Input: 10000, Cached: 6000, CacheWrite: 1000, Output: 2000, Reasoning: 1500, Total: 12000}
	tok := tokensOf(u)
	want := discover.Tokens{Input: 3000, Output: 2000, CacheRead: 6000, CacheWrite: 1000}
	if diff := cmp.Diff(want, tok); diff != "" {
		t.Errorf("tokens (-want +got):\n%s", diff)
	}
	if all := tok.Input + tok.Output + tok.CacheRead + tok.CacheWrite; all != u.Total {
		t.Errorf("classes add up to %d, want total_tokens %d (each token once)", all, u.Total)
	}
	prices := discover.NewPrices(defaultPrices, nil)
	usd, ok := estimate(prices, "gpt-5", tok)
	if !ok || math.Abs(usd-0.02575) > 1e-12 {
		t.Errorf("gpt-5: %v %v, want 0.02575", usd, ok)
	}
	// gpt-5-codex-… dated ids take the gpt-5-codex entry; mini the mini one.
	if usd, _ := estimate(prices, "gpt-5-mini-2025-08-07", tok); math.Abs(usd-(3000*0.25+6000*0.025+1000*0.25+2000*2)/1e6) > 1e-12 {
		t.Errorf("gpt-5-mini: %v", usd)
	}
	if _, ok := estimate(prices, "fake-model", tok); ok {
		t.Error("fake-model priced without a config price")
	}
	// A config price applies to Codex too; without cache_read, cached input
	// costs plain input.
	cfg := &meta.Config{Prices: map[string]meta.Price{"fake-model": {Input: 1, Output: 2}}}
	usd, ok = estimate(discover.NewPrices(defaultPrices, cfg), "fake-model", tok)
	if !ok || math.Abs(usd-(3000+6000+1000+2000*2)/1e6) > 1e-12 {
		t.Errorf("fake-model with config price: %v %v", usd, ok)
	}
	// More cached than input (malformed) never makes input negative.
	if got := tokensOf(&usage{Input: 5, Cached: 9}); got.Input != 0 {
		t.Errorf("input %d, want 0", got.Input)
	}
}

// TestCodexSessionCost: sessions get an estimate at their model's price, from
// the built-in table or config.json `prices`; an unpriced model has none.
func TestCodexSessionCost(t *testing.T) {
	home := legacyHome(t)
	const id = "0199a000-0000-7000-8000-000000000001"
	s := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))[id]
	// gpt-5: input 12, cache read 30, output 7.
	if want := (12*1.25 + 30*0.125 + 7*10) / 1e6; s.CostUSD == nil || math.Abs(*s.CostUSD-want) > 1e-15 || s.CostSource != "estimate" {
		t.Errorf("legacy gpt-5 session: cost %v %q, want %v estimate", s.CostUSD, s.CostSource, want)
	}

	home = fixtureHome(t)
	all := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))
	for _, s := range all {
		if s.CostUSD != nil {
			t.Errorf("%s (%s): cost %v without a price", s.ID, s.Model, *s.CostUSD)
		}
	}
	env := testEnv(home, nil, nil)
	env.Config = &meta.Config{Prices: map[string]meta.Price{"fake-model": {Input: 1, Output: 2, CacheRead: 0.1}}}
	priced := 0
	for _, s := range discovertest.DiscoverAll(t, testAdapter(nil), env) {
		if s.Tokens == nil || s.Tokens.Zero() {
			continue
		}
		priced++
		want := (float64(s.Tokens.Input)*1 + float64(s.Tokens.CacheRead)*0.1 + float64(s.Tokens.CacheWrite)*1 + float64(s.Tokens.Output)*2) / 1e6
		if s.CostUSD == nil || math.Abs(*s.CostUSD-want) > 1e-15 || s.CostSource != "estimate" {
			t.Errorf("%s: cost %v %q, want %v estimate", s.ID, s.CostUSD, s.CostSource, want)
		}
	}
	if priced == 0 {
		t.Error("no fixture session with tokens")
	}
}

// Codex 0.169.0's default model (docs/agents/codex.md, "Default model") has a
// price: (3000·2 + 6000·0.1 + 1000·2.5 + 2000·10) / 1e6 for the worked example.
func TestDefaultModelPriced(t *testing.T) {
	tok := discover.Tokens{Input: 3000, Output: 2000, CacheRead: 6000, CacheWrite: 1000}
	usd, ok := estimate(discover.NewPrices(defaultPrices, nil), "gpt-6.1-sol", tok)
	if want := (3000*2 + 6000*0.1 + 1000*2.5 + 2000*10) / 1e6; !ok || math.Abs(usd-want) > 1e-12 {
		t.Errorf("gpt-6.1-sol: %v %v, want %v", usd, ok, want)
	}
}
