package main

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// budgetFlags are launch's and resume's limits on one run (README "Budgets").
func budgetFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "max-duration", Usage: "stop the agent `DUR` of wall time after it confirmed its session (e.g. 30m)"},
		&cli.StringFlag{Name: "max-cost", Usage: "stop the agent once its session cost passes `USD` (e.g. 2.50; agent-reported or estimated)"},
		&cli.StringFlag{Name: "max-tokens", Usage: "stop the agent once its session passes `N` tokens, counting input+output+cache read+cache write"},
	}
}

// budget is the run's budget: the flags, then config "budget" for the limits
// they leave unset. nil: no limit.
func budgetOf(o agentOptions, cfg *meta.Config) (*meta.Budget, error) {
	b, err := meta.ParseBudget(o.MaxDuration, o.MaxCost, o.MaxTokens)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	if def := cfg.Budget; def != nil {
		if def.MaxDurationSeconds < 0 || def.MaxCostUSD < 0 || def.MaxTokens < 0 {
			return nil, usageErrorf("config budget %+v: limits must be positive; fix config.json", *def)
		}
		b = b.Merge(def)
	}
	if b.Empty() {
		return nil, nil
	}
	return &b, nil
}

// sessionTotals is launch.Deps.Totals: a launched session's own tokens and
// cost, read through its adapter's one-session path (discover.FindAll, which
// reads only what the agent appended since the parse index last saw the file),
// exactly as `status` and `list` count them.
func sessionTotals(newEnv func() *discover.Env) func(ctx context.Context, r *meta.Launch) (meta.Usage, error) {
	return func(ctx context.Context, r *meta.Launch) (meta.Usage, error) {
		sid := r.CurrentSessionID()
		var ad []discover.Adapter
		for _, a := range allAdapters() {
			if a.Name() == agents.ReaderOf(r.Adapter) {
				ad = append(ad, a)
			}
		}
		if len(ad) == 0 || sid == "" {
			return meta.Usage{}, fmt.Errorf("no reader for %s session %q", r.Adapter, sid)
		}
		// The run's files are under the home it was launched with.
		env := newEnv().AtHome(r.Home)
		env.Procs = noProcs{} // totals come from the agent's files alone: no /proc scan per poll
		res := discover.FindAll(ctx, env, ad, discover.DefaultTimeout, discover.Query{IDs: []string{sid}})
		for i := range res.Sessions {
			s := &res.Sessions[i]
			if s.ID != sid || s.Adapter != r.Adapter {
				continue
			}
			if dt, ok := ad[0].(discover.Detailer); ok && s.Tokens == nil {
				// OpenClaw: lifetime tokens and cost only from the gateway's
				// history, as `status` reads them.
				if full, err := dt.Detail(ctx, env, *s); err == nil {
					s = &full
				}
			}
			t, usd := s.Own()
			u := meta.Usage{Tokens: t.Input + t.Output + t.CacheRead + t.CacheWrite}
			if s.CostUSD != nil {
				u.CostUSD = &usd
			}
			return u, nil
		}
		return meta.Usage{}, fmt.Errorf("session %s not found yet", sid)
	}
}

// noProcs is the process table of a budget poll: an empty one that says it has
// no process information, so adapters skip their process scans.
type noProcs struct{}

func (noProcs) Find(int) (proc.Process, error)  { return proc.Process{}, proc.ErrGone }
func (noProcs) BootID() string                  { return "" }
func (noProcs) Available() bool                 { return false }
func (noProcs) Get(int) (proc.Process, bool)    { return proc.Process{}, false }
func (noProcs) All() []proc.Process             { return nil }
func (noProcs) Argv(int) ([]string, error)      { return nil, proc.ErrGone }
func (noProcs) Cwd(int) (string, error)         { return "", proc.ErrGone }
func (noProcs) Exe(int) (string, error)         { return "", proc.ErrGone }
func (noProcs) Environ(int) ([]string, error)   { return nil, proc.ErrGone }
func (noProcs) StartTime(int) (time.Time, bool) { return time.Time{}, false }
