package codex

import (
	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/meta"
)

// defaultPrices are OpenAI's standard-tier API prices in USD per million tokens
// (input, cached input, output) by model-id prefix; the longest matching key
// wins (discover.Prices). Table dated 2026-11-25, from OpenAI's published
// standard-tier prices for these ids (README "JSON" says so too); newer models
// have no entry until added here or in config.json `prices`. OpenAI bills no
// cache-write premium: cache writes cost plain input. Reasoning tokens are
// already part of output_tokens and are billed as output.
//
// gpt-6.1-sol is the model Codex 0.169.0 (the pinned version) asks for when the
// config names none — seen as the "model" of its first /v1/responses request
// against a local server (docs/agents/codex.md, "Default model"). It and
// gpt-6-sol were checked 2026-11-25 against OpenAI's model pages: 2/10, cached
// input 0.10 (gpt-6-sol 0.20), and unlike the gpt-5 family a cache-write price
// of 2.50. A request over 272K input tokens is billed at a long-context rate
// (2x input and cache, 1.5x output) that this per-session estimate does not
// model: such sessions are under-estimated.
var defaultPrices = map[string]meta.Price{
	"gpt-6.1-sol":        {Input: 2, CacheRead: 0.1, CacheWrite: 2.5, Output: 10},
	"gpt-6-sol":          {Input: 2, CacheRead: 0.2, CacheWrite: 2.5, Output: 10},
	"gpt-5":              {Input: 1.25, CacheRead: 0.125, Output: 10},
	"gpt-5-codex":        {Input: 1.25, CacheRead: 0.125, Output: 10},
	"gpt-5-mini":         {Input: 0.25, CacheRead: 0.025, Output: 2},
	"gpt-5-nano":         {Input: 0.05, CacheRead: 0.005, Output: 0.4},
	"gpt-5.1":            {Input: 1.25, CacheRead: 0.125, Output: 10},
	"gpt-5.1-codex-mini": {Input: 0.25, CacheRead: 0.025, Output: 2},
	"gpt-4.1":            {Input: 2, CacheRead: 0.5, Output: 8},
	"gpt-4.1-mini":       {Input: 0.4, CacheRead: 0.1, Output: 1.6},
	"gpt-4.1-nano":       {Input: 0.1, CacheRead: 0.025, Output: 0.4},
	"gpt-4o":             {Input: 2.5, CacheRead: 1.25, Output: 10},
	"gpt-4o-mini":        {Input: 0.15, CacheRead: 0.075, Output: 0.6},
	"o3":                 {Input: 2, CacheRead: 0.5, Output: 8},
	"o4-mini":            {Input: 1.1, CacheRead: 0.275, Output: 4.4},
	"codex-mini-latest":  {Input: 1.5, CacheRead: 0.375, Output: 6},
}

// estimate prices a session's cumulative tokens at its model's price. The
// classes are disjoint here (see tokensOf). A price without cache_read bills
// cached input at the input price, without cache_write cache writes likewise:
// an upper bound rather than a guess at a discount.
func estimate(prices *discover.Prices, model string, t discover.Tokens) (float64, bool) {
	if model == "" {
		return 0, false
	}
	p, ok := prices.Lookup(model)
	if !ok {
		return 0, false
	}
	cr, cw := p.CacheRead, p.CacheWrite
	if cr == 0 {
		cr = p.Input
	}
	if cw == 0 {
		cw = p.Input
	}
	return (float64(t.Input)*p.Input + float64(t.CacheRead)*cr + float64(t.CacheWrite)*cw + float64(t.Output)*p.Output) / 1e6, true
}

// tokensOf splits Codex's cumulative usage into disjoint classes. Codex follows
// OpenAI's convention: input_tokens is every prompt token, and both
// cached_input_tokens and cache_write_input_tokens are parts of it (Codex's own
// non-cached count is input − cached; it never adds either to input). So
// input = input_tokens − cached − cache_write, never below 0.
// output_tokens already includes reasoning_output_tokens.
func tokensOf(u *usage) discover.Tokens {
	in := u.Input - u.Cached - u.CacheWrite
	if in < 0 {
		in = 0
	}
	return discover.Tokens{Input: in, Output: u.Output, CacheRead: u.Cached, CacheWrite: u.CacheWrite}
}
