package claude

import (
	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/meta"
)

// defaultPrices are USD per million tokens (input, output) by model-id prefix;
// the longest matching prefix wins. Cache writes cost 1.25× input (5 minutes) or
// 2× input (1 hour), cache reads 0.1× input. The opus-4-8 entry reproduces
// Claude Code 2.1.197's own total_cost_usd exactly. claude-opus-5-5 (2.1.329's
// default) reads cache at 0.05× input, so its entry spells the cache prices out:
// measured against 2.1.329's own modelUsage costUSD (list price) for a million
// tokens of each class — input $4, output $20, cache write (5 m) $5, cache read
// $0.20; the 1 h write is taken as 2× input. PricesChecked dates the table.
var defaultPrices = map[string]meta.Price{
	"claude-opus-5-5":    {Input: 4, Output: 20, CacheWrite: 5, CacheRead: 0.2},
	"claude-opus-4-8":    {Input: 5, Output: 25},
	"claude-opus-4-7":    {Input: 5, Output: 25},
	"claude-opus-4-6":    {Input: 5, Output: 25},
	"claude-opus-4-5":    {Input: 5, Output: 25},
	"claude-opus-4-1":    {Input: 15, Output: 75},
	"claude-opus-4-2025": {Input: 15, Output: 75},
	"claude-opus-4-0":    {Input: 15, Output: 75},
	"claude-sonnet-4":    {Input: 3, Output: 15},
	"claude-3-7-sonnet":  {Input: 3, Output: 15},
	"claude-3-5-sonnet":  {Input: 3, Output: 15},
	"claude-haiku-4-5":   {Input: 1, Output: 5},
	"claude-3-5-haiku":   {Input: 0.8, Output: 4},
	"claude-3-haiku":     {Input: 0.25, Output: 1.25},
	"claude-3-opus":      {Input: 15, Output: 75},
}

// PricesChecked is when defaultPrices was last checked against the pinned
// Claude Code versions' own cost figures (doctor shows it).
const PricesChecked = "2026-11-25"

// Price tier multipliers (input side: input, cache writes and reads; output).
// Long context: a request whose prompt (input + cache writes + cache reads)
// exceeds 200k tokens is billed entirely at 2× input and 1.5× output (Anthropic's
// long-context rates, e.g. Sonnet 4.5 $6/$22.50 instead of $3/$15). Fast mode
// (usage.speed "fast", Opus 4.6+): 6× every class ($30/$150 instead of $5/$25).
// A fast request over 200k gets both.
const (
	longInput, longOutput = 2.0, 1.5
	fastRate              = 6.0
)

func tierRates(tier uint8) (in, out float64) {
	in, out = 1, 1
	if tier&tierLong != 0 {
		in, out = in*longInput, out*longOutput
	}
	if tier&tierFast != 0 {
		in, out = in*fastRate, out*fastRate
	}
	return in, out
}

// priceTable is discover's price lookup over the built-in table, with the cost
// of Claude's usage classes.
type priceTable struct{ *discover.Prices }

func newPriceTable(cfg *meta.Config) *priceTable {
	return &priceTable{discover.NewPrices(defaultPrices, cfg)}
}

// cost estimates the cost of a transcript's usage. unknown lists the models with
// tokens but no price; then there is no estimate at all (a partial sum would
// understate the cost without saying so).
func (t *priceTable) cost(usage []modelUsage) (usd float64, unknown []string) {
	for _, m := range usage {
		if m.U.zero() {
			continue
		}
		p, ok := t.Lookup(m.Model)
		if !ok {
			unknown = append(unknown, m.Model)
			continue
		}
		cw5, cw1, cr := 1.25*p.Input, 2*p.Input, 0.1*p.Input
		if p.CacheWrite != 0 {
			cw5, cw1 = p.CacheWrite, p.CacheWrite*2/1.25
		}
		if p.CacheRead != 0 {
			cr = p.CacheRead
		}
		in, out := tierRates(m.Tier)
		u := m.U
		usd += (in*(float64(u.In)*p.Input+float64(u.CW5m)*cw5+float64(u.CW1h)*cw1+float64(u.CR)*cr) + out*float64(u.Out)*p.Output) / 1e6
	}
	return usd, unknown
}
