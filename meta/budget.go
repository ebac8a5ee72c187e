package meta

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// EventBudgetExceeded is journalled once when a launch breaches its budget,
// before the stop that follows it (session.stopped).
const EventBudgetExceeded = "session.budget_exceeded"

// Exit reasons of a launch stopped for its budget (Launch.ExitReason).
const (
	ReasonBudgetDuration = "budget:duration"
	ReasonBudgetCost     = "budget:cost"
	ReasonBudgetTokens   = "budget:tokens"
)

// Budget is the most one launched run may take: wall time since the launch,
// cost in USD and tokens (input + output + cache read + cache write). A zero
// limit is no limit.
type Budget struct {
	MaxDurationSeconds float64 `json:"max_duration_seconds,omitempty"`
	MaxCostUSD         float64 `json:"max_cost_usd,omitempty"`
	MaxTokens          int64   `json:"max_tokens,omitempty"`
}

// Empty reports whether the budget sets no limit.
func (b *Budget) Empty() bool { return b == nil || *b == Budget{} }

// MaxDuration is the duration limit (0: none).
func (b *Budget) MaxDuration() time.Duration {
	if b == nil {
		return 0
	}
	return time.Duration(b.MaxDurationSeconds * float64(time.Second))
}

// Merge fills the limits b leaves unset from def (config defaults).
func (b Budget) Merge(def *Budget) Budget {
	if def == nil {
		return b
	}
	if b.MaxDurationSeconds == 0 {
		b.MaxDurationSeconds = def.MaxDurationSeconds
	}
	if b.MaxCostUSD == 0 {
		b.MaxCostUSD = def.MaxCostUSD
	}
	if b.MaxTokens == 0 {
		b.MaxTokens = def.MaxTokens
	}
	return b
}

// ParseBudget reads the three limits as given on a command line or in a
// matrix file ("" leaves one unset). Errors name the flag.
func ParseBudget(duration, cost, tokens string) (Budget, error) {
	var b Budget
	if v := strings.TrimSpace(duration); v != "" {
		d, err := ParseDuration(v)
		if err != nil || d <= 0 {
			return b, fmt.Errorf("--max-duration %q: want a positive duration such as 90s, 30m or 2h", duration)
		}
		b.MaxDurationSeconds = d.Seconds()
	}
	if v := strings.TrimSpace(cost); v != "" {
		f, err := strconv.ParseFloat(strings.TrimPrefix(v, "$"), 64)
		if err != nil || f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return b, fmt.Errorf("--max-cost %q: want a positive amount in USD such as 0.50", cost)
		}
		b.MaxCostUSD = f
	}
	if v := strings.TrimSpace(tokens); v != "" {
		n, err := strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 10, 64)
		if err != nil || n <= 0 {
			return b, fmt.Errorf("--max-tokens %q: want a positive whole number of tokens (input+output+cache)", tokens)
		}
		b.MaxTokens = n
	}
	return b, nil
}

// Usage is what a run has taken so far, as the budget counts it.
type Usage struct {
	Tokens  int64    `json:"tokens"`
	CostUSD *float64 `json:"cost_usd,omitempty"`
	Elapsed float64  `json:"elapsed_seconds"`
}

// Breach is a budget the run went over: which limit, the limit and what was
// used, when it was noticed and by whom (supervisor | sweep).
type Breach struct {
	Reason  string    `json:"reason"`
	Limit   string    `json:"limit"`
	Used    string    `json:"used"`
	Usage   Usage     `json:"usage"`
	At      time.Time `json:"at"`
	By      string    `json:"by"`
	Stopped bool      `json:"stopped,omitempty"` // the stop that followed observed the exit
	// PID and Start identify the process stopping the agent for the breach.
	PID   int    `json:"pid,omitempty"`
	Start uint64 `json:"start,omitempty"`
}

// Check returns the first limit u breaches (duration, then cost, then
// tokens), or nil.
func (b *Budget) Check(u Usage) *Breach {
	if b.Empty() {
		return nil
	}
	if b.MaxDurationSeconds > 0 && u.Elapsed >= b.MaxDurationSeconds {
		return &Breach{Reason: ReasonBudgetDuration, Limit: secs(b.MaxDurationSeconds), Used: secs(u.Elapsed), Usage: u}
	}
	if b.MaxCostUSD > 0 && u.CostUSD != nil && *u.CostUSD > b.MaxCostUSD {
		return &Breach{Reason: ReasonBudgetCost, Limit: fmt.Sprintf("$%.4f", b.MaxCostUSD), Used: fmt.Sprintf("$%.4f", *u.CostUSD), Usage: u}
	}
	if b.MaxTokens > 0 && u.Tokens > b.MaxTokens {
		return &Breach{Reason: ReasonBudgetTokens, Limit: fmt.Sprintf("%d tokens", b.MaxTokens), Used: fmt.Sprintf("%d tokens", u.Tokens), Usage: u}
	}
	return nil
}

func secs(s float64) string {
	return (time.Duration(s*float64(time.Second)) / time.Millisecond * time.Millisecond).String()
}

// String is how help and status show a budget.
func (b *Budget) String() string {
	if b.Empty() {
		return ""
	}
	var parts []string
	if b.MaxDurationSeconds > 0 {
		parts = append(parts, "duration "+secs(b.MaxDurationSeconds))
	}
	if b.MaxCostUSD > 0 {
		parts = append(parts, fmt.Sprintf("cost $%.4f", b.MaxCostUSD))
	}
	if b.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", b.MaxTokens))
	}
	return strings.Join(parts, ", ")
}
