// The upkeep every reading command does before it looks at sessions, since
// there is no daemon to do it: expired fuses fire, launches whose agent and
// supervisor died are finalised, and agentctl's launch records become evidence.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/launch"
	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

// fuseUpkeep is what a command that reads does about expired fuses: nothing
// slow. When one is due it starts a detached `agentctl __fire-fuses`, which
// claims and fires it (exactly once across processes, locks.FireDueFuses), so
// a fuse's script — up to 300 s — never delays `list`. Without an executable
// to start (in-process runs) it fires here.
func (e *cmdEnv) fuseUpkeep(ctx context.Context) {
	if e.untrusted != nil || !locks.AnyDue(e.store, false) { // an untrusted state dir is read, never acted on
		return
	}
	var self string
	if e.s.executable != nil {
		self, _ = e.s.executable()
	}
	if self == "" {
		e.fireFuses(ctx, false)
		return
	}
	if err := startFuseFirer(self, e.store.Dir); err != nil {
		warn(e.s, fmt.Sprintf("fire expired fuses in the background: %v; firing them now", err))
		e.fireFuses(ctx, false)
	}
}

// fireFuses fires the fuses that expired, once across every agentctl process
// (locks.FireDueFuses): sweep calls it (retry: also fuses whose firer died
// mid-action), and __fire-fuses for the commands that read.
func (e *cmdEnv) fireFuses(ctx context.Context, retry bool) []locks.Fired {
	return fireDueFuses(ctx, e.store, e.deps(), retry, func(m string) { warn(e.s, m) })
}

// readEnv is the Env of a command that reads sessions: lazy finalisation first
// (launches whose agent and supervisor died are finalised once, now), then
// agentctl's launch records as evidence. Over a state dir that fails the trust
// rule there is no upkeep: it is read, never acted on.
func (e *cmdEnv) readEnv(ctx context.Context) *discover.Env {
	env := e.newEnv()
	env.OnlyAlive = e.onlyAlive
	env.Slots = e.slots
	e.fuseUpkeep(ctx)
	e.finaliseDead(ctx)
	launches, err := e.store.ReadLaunches()
	if err != nil {
		warn(e.s, fmt.Sprintf("launch records unreadable, launched sessions may be missing: %v", err))
	}
	env.Launches = launches
	return env
}

// deps wires the write side to this command's store and config.
func (e *cmdEnv) deps() *launch.Deps {
	if e.store.LaunchTTL == 0 {
		e.store.ApplyConfig(e.config) // once per command (it warns about a bad launch_ttl)
	}
	d := launch.DefaultDeps(e.store, e.config)
	d.Warn = func(m string) { warn(e.s, m) }
	d.Totals = sessionTotals(e.newEnv)
	return d
}

// finaliseDead is the lazy half of supervision, run by every command that reads
// sessions: launches whose agent and supervisor both died get finalised once,
// here, and the slow half (on-complete, the webhook, a gateway's answer) goes
// to a detached `agentctl __finalise`, so reading never waits on it.
func (e *cmdEnv) finaliseDead(ctx context.Context) {
	if e.untrusted != nil {
		return
	}
	d := e.deps()
	if e.s.executable != nil {
		if self, err := e.s.executable(); err == nil {
			d.Detach = d.Detached(self)
		}
	}
	if _, err := d.FinaliseDead(ctx); err != nil {
		warn(e.s, fmt.Sprintf("finalise ended launches: %v", err))
	}
}

// internalDeps wires the write side for a detached internal command (the
// supervisor, the finaliser): its output is the launch log, so every line is
// stamped and says who wrote it.
func internalDeps(state string, s *host, who string) (*launch.Deps, func(string, ...any)) {
	store := meta.NewStore(state)
	store.Now = s.now
	logw := func(f string, a ...any) {
		fmt.Fprintf(s.ErrOut, "agentctl: %s: %s: %s\n", who, time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(f, a...))
	}
	store.Warn = logw
	cfg, warns, err := loadTrustedConfig(store)
	if err != nil {
		cfg = &meta.Config{}
		logw("%v", err)
	}
	for _, w := range warns {
		logw("%s", w)
	}
	store.ApplyConfig(cfg)
	deps := launch.DefaultDeps(store, cfg)
	deps.Warn = func(m string) { logw("%s", m) }
	// The supervisor's environment is the agent's: its HOME is where the agent
	// writes (launch --home), which is where the budget's totals are read.
	deps.Totals = sessionTotals(func() *discover.Env {
		return &discover.Env{Home: s.getenv("HOME"), Getenv: s.getenv, Now: s.now, StateDir: state, Config: cfg}
	})
	return deps, logw
}

// startFuseFirer starts `self __fire-fuses --state DIR` in its own session with
// its output appended to logs/fuses.log, and does not wait for it.
func startFuseFirer(self, state string) error {
	cmd := &exec.Cmd{Path: self, Args: []string{self, "__fire-fuses", "--state", state},
		Env: os.Environ(), SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := os.MkdirAll(filepath.Join(state, "logs"), 0o700); err == nil {
		if f, err := meta.OpenAppend(filepath.Join(state, "logs", "fuses.log"), nil); err == nil {
			defer f.Close()
			cmd.Stdout, cmd.Stderr = f, f
		}
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reaped if this process lives on (list --watch)
	return nil
}

// fireDueFuses fires as this process. Failures are warnings: the fuse has
// fired, and a failed webhook waits in the outbox.
func fireDueFuses(ctx context.Context, store *meta.Store, d *launch.Deps, retry bool, warnf func(string)) []locks.Fired {
	if err := store.Trusted(); err != nil {
		warnf(fmt.Sprintf("fuses not fired: %v", err))
		return nil
	}
	pid := os.Getpid()
	owner := locks.Owner{PID: pid, Boot: d.Procs.BootID()}
	if p, err := d.Procs.Find(pid); err == nil {
		owner.Start = p.StartTicks
	}
	fired, err := locks.FireDueFuses(ctx, store, owner, retry, d.FireFuse)
	if err != nil {
		warnf(fmt.Sprintf("fuses: %v", err))
	}
	for _, f := range fired {
		if f.Err != nil {
			warnf(fmt.Sprintf("fuse on %s fired: %v", f.Fuse.Directory, f.Err))
		}
	}
	return fired
}
