package discover

import (
	"math"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/meta"
)

// Prices resolves model ids to prices for cost estimates: an adapter's built-in
// table with the user's config.json `prices` on top. It remembers each model's
// answer (a listing asks about the same few models thousands of times); it is
// safe for concurrent use (Codex prices sessions from parallel workers).
//
// One rule matches a model to a key, for every adapter: a trailing "[…]" tag is
// dropped from both (Claude's stream-json says claude-opus-4-8[1m] where its
// transcript says claude-opus-4-8); then the key equal to the model wins, then
// the key equal to the model without its "provider/" (pi records
// anthropic/claude-…, users write claude-…), then the longest key either begins
// with (a key names a model family: claude-sonnet-4 prices every dated release).
type Prices struct {
	prices map[string]meta.Price
	mu     sync.Mutex
	memo   map[string]priced
}

type priced struct {
	p  meta.Price
	ok bool
}

// NewPrices returns builtin (may be nil) with cfg's prices on top.
func NewPrices(builtin map[string]meta.Price, cfg *meta.Config) *Prices {
	t := &Prices{prices: map[string]meta.Price{}, memo: map[string]priced{}}
	for k, v := range builtin {
		t.prices[normModel(k)] = v
	}
	if cfg != nil {
		for k, v := range cfg.Prices {
			t.prices[normModel(k)] = v
		}
	}
	return t
}

// Empty reports whether no model has a price.
func (t *Prices) Empty() bool { return len(t.prices) == 0 }

// normModel drops a trailing "[…]" context tag.
func normModel(m string) string {
	if strings.HasSuffix(m, "]") {
		if i := strings.LastIndexByte(m, '['); i > 0 {
			m = m[:i]
		}
	}
	return m
}

// Lookup finds the price of model.
func (t *Prices) Lookup(model string) (meta.Price, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.memo[model]; ok {
		return r.p, r.ok
	}
	p, ok := t.match(normModel(model))
	t.memo[model] = priced{p, ok}
	return p, ok
}

// Estimate prices tokens at model's price, in USD per million tokens of each
// class; false when model is "" or has no price.
func (t *Prices) Estimate(model string, tok Tokens) (float64, bool) {
	if t.Empty() || model == "" {
		return 0, false
	}
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	return (float64(tok.Input)*p.Input + float64(tok.Output)*p.Output +
		float64(tok.CacheRead)*p.CacheRead + float64(tok.CacheWrite)*p.CacheWrite) / 1e6, true
}

func (t *Prices) match(model string) (meta.Price, bool) {
	if p, ok := t.prices[model]; ok {
		return p, true
	}
	_, id, _ := strings.Cut(model, "/")
	if p, ok := t.prices[id]; ok && id != "" {
		return p, true
	}
	best, found := "", false
	for k := range t.prices {
		if !strings.HasPrefix(model, k) && (id == "" || !strings.HasPrefix(id, k)) {
			continue
		}
		if !found || len(k) > len(best) || (len(k) == len(best) && k < best) {
			best, found = k, true
		}
	}
	return t.prices[best], found
}

// Cost is the one rule every adapter uses for `cost_usd` (README "JSON"): a
// positive cost the agent reported wins (cost_source agent); else an estimate
// from the tokens, when there are tokens and every model with tokens has a
// price (cost_source estimate; a configured price of 0 gives 0); else the cost
// is unknown and absent. An agent-reported 0 is not taken as "free": agents
// write 0 when they have no price for the model (OpenCode, Pi), so it counts as
// not reported. Zero tokens have no cost at all (nothing was billed, or nothing
// was recorded): absent, never 0. Either is rounded to 1e-9 USD, so sums of
// per-request costs print as 0.00056, not 0.0005600000000000001.
func Cost(agent float64, tokens Tokens, estimate float64, priced bool) (*float64, string) {
	switch {
	case agent > 0:
		agent = RoundCost(agent)
		return &agent, "agent"
	case !tokens.Zero() && priced:
		estimate = RoundCost(estimate)
		return &estimate, "estimate"
	}
	return nil, ""
}

// RoundCost rounds a cost in USD to 1e-9 (a billionth of a dollar: far below
// any price's precision, far above float64's noise).
func RoundCost(usd float64) float64 {
	if math.IsInf(usd, 0) || math.IsNaN(usd) {
		return usd
	}
	return math.Round(usd*1e9) / 1e9
}
