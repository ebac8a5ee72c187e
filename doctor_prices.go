package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/claude"
)

// pricesReport is doctor's view of cost estimates: when the built-in price
// table was last checked, and the models seen in the last 7 days' sessions that
// have tokens but no cost (no price: add one to config.json `prices`).
type pricesReport struct {
	TableChecked string          `json:"table_checked"`
	Unpriced     []unpricedModel `json:"unpriced_models"`
}

type unpricedModel struct {
	Adapter  string `json:"adapter"`
	Model    string `json:"model"`
	Sessions int    `json:"sessions"`
}

// checkPrices fills r from the sessions doctor listed, with a warning per
// adapter whose models lack a price.
func checkPrices(ls *discover.Listing, f *findings) pricesReport {
	r := pricesReport{TableChecked: claude.PricesChecked, Unpriced: []unpricedModel{}}
	count := map[[2]string]int{}
	for i := 0; i < ls.Len(); i++ {
		s := ls.At(i)
		if s.CostUSD != nil || s.Tokens == nil || s.Tokens.Zero() {
			continue
		}
		models := s.Models
		if len(models) == 0 {
			models = []string{s.Model}
		}
		for _, m := range models {
			count[[2]string{s.Adapter, orDash(m)}]++
		}
	}
	for k, n := range count {
		r.Unpriced = append(r.Unpriced, unpricedModel{Adapter: k[0], Model: k[1], Sessions: n})
	}
	sort.Slice(r.Unpriced, func(i, j int) bool {
		a, b := r.Unpriced[i], r.Unpriced[j]
		if a.Adapter != b.Adapter {
			return a.Adapter < b.Adapter
		}
		return a.Model < b.Model
	})
	byAdapter := map[string][]string{}
	var order []string
	for _, u := range r.Unpriced {
		if byAdapter[u.Adapter] == nil {
			order = append(order, u.Adapter)
		}
		byAdapter[u.Adapter] = append(byAdapter[u.Adapter], fmt.Sprintf("%s (%d sessions)", u.Model, u.Sessions))
	}
	for _, a := range order {
		f.warning("prices", fmt.Sprintf("%s: no price for %s; their sessions show no cost", a, strings.Join(byAdapter[a], ", ")),
			`add the models to "prices" in config.json (USD per million tokens: {"input": …, "output": …})`)
	}
	return r
}

func printPrices(w io.Writer, r pricesReport) {
	printHuman(w, "Prices: built-in table checked %s; %d models seen without a price\n", r.TableChecked, len(r.Unpriced))
}
