package launch

import (
	"context"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/internal/clock"
	"github.com/agentctl/agentctl/launch/worktree"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// Deps is everything the write side touches outside its own memory: the state
// store, the process table, signals, the clock, the network. Tests replace any of
// it; DefaultDeps wires the real machine.
type Deps struct {
	Store  *meta.Store
	Config *meta.Config
	// Environ is the base environment of hooks (and of nothing else).
	Environ []string
	HTTP    *http.Client
	// WebhookBackoff are the waits before the retries of a webhook delivery (three
	// retries: 1 s, 2 s, 4 s).
	WebhookBackoff []time.Duration
	HookTimeout    time.Duration
	// Procs is the machine now (never a snapshot): stop re-verifies a PID with it
	// immediately before every signal.
	Procs    proc.Source
	Snapshot func() proc.Table
	Kill     func(pid int, sig syscall.Signal) error
	Sleep    func(ctx context.Context, d time.Duration) error
	Warn     func(msg string)
	// Detach hands the slow half of a lazy finalisation (on-complete, the
	// webhook, asking a gateway whether a run ended) to another process, so the
	// command that noticed the end does not wait for it (Detached starts
	// `agentctl __finalise`). nil does it inline: sweep, launch --wait.
	Detach func(r *meta.Launch) error
	// Totals reads a launched session's own token total and cost so far, for
	// its budget (main wires the read side's one-session path); nil: only
	// --max-duration can be enforced.
	Totals func(ctx context.Context, r *meta.Launch) (meta.Usage, error)
}

// DefaultDeps wires the real process table, signals, clock and HTTP client.
func DefaultDeps(store *meta.Store, cfg *meta.Config) *Deps {
	return &Deps{
		Store:          store,
		Config:         cfg,
		Environ:        os.Environ(),
		HTTP:           &http.Client{Timeout: 10 * time.Second},
		WebhookBackoff: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second},
		HookTimeout:    300 * time.Second,
		Procs:          proc.Live(),
		Snapshot:       proc.Snapshot,
		Kill:           syscall.Kill,
		Sleep:          clock.Sleep,
		Warn:           func(string) {},
	}
}

// Git is what the worktree package needs of the machine: the process table
// (to wait for a git a killed accept left working) and the clock.
func (d *Deps) Git() worktree.Procs {
	return worktree.Procs{Snapshot: d.Snapshot, Sleep: d.Sleep}
}

func (d *Deps) now() time.Time { return d.Store.Time().UTC() }

func (d *Deps) warn(format string, args ...any) {
	if d.Warn != nil {
		d.Warn(sprintf(format, args...))
	}
}

// verify reports whether pid is alive now with exactly this start time (and
// boot): proc.Check's Verified, because only a verified process may be signalled.
func (d *Deps) verify(pid int, start uint64, boot string) (proc.Process, bool) {
	v := proc.Check(d.Procs, proc.ID{PID: pid, StartTicks: start, BootID: boot})
	return v.Process, v.Verified
}

// self returns this process's PID and start time.
func (d *Deps) self() (int, uint64) {
	pid := os.Getpid()
	if p, err := d.Procs.Find(pid); err == nil {
		return pid, p.StartTicks
	}
	return pid, 0
}
