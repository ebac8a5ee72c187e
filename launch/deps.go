package launch

import (
	"context"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/discover/proc"
	"github.com/agentctl/agentctl/meta"
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
	// Lookup reads one process now (never a snapshot): stop re-verifies a PID with
	// it immediately before every signal.
	Lookup   func(pid int) (proc.Process, error)
	BootID   func() string
	Snapshot func() proc.Table
	Kill     func(pid int, sig syscall.Signal) error
	Sleep    func(ctx context.Context, d time.Duration) error
	Warn     func(msg string)
	// Detach hands the slow half of a lazy finalisation (on-complete, the
	// webhook, asking a gateway whether a run ended) to another process, so the
	// command that noticed the end does not wait for it (Detached starts
	// `agentctl __finalise`). nil does it inline: sweep, launch --wait.
	Detach func(r *meta.Launch) error
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
		Lookup:         proc.Lookup,
		BootID:         proc.CurrentBootID,
		Snapshot:       proc.Snapshot,
		Kill:           syscall.Kill,
		Sleep:          sleepCtx,
		Warn:           func(string) {},
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *Deps) now() time.Time { return d.Store.Time().UTC() }

func (d *Deps) warn(format string, args ...any) {
	if d.Warn != nil {
		d.Warn(sprintf(format, args...))
	}
}

// verify reports whether pid is alive now with exactly this start time (and boot).
func (d *Deps) verify(pid int, start uint64, boot string) (proc.Process, bool) {
	if pid <= 0 {
		return proc.Process{}, false
	}
	if boot != "" && d.BootID != nil {
		if cur := d.BootID(); cur != "" && cur != boot {
			return proc.Process{}, false
		}
	}
	p, err := d.Lookup(pid)
	if err != nil || p.StartTicks != start {
		return proc.Process{}, false
	}
	return p, true
}

// self returns this process's PID and start time.
func (d *Deps) self() (int, uint64) {
	pid := os.Getpid()
	if p, err := d.Lookup(pid); err == nil {
		return pid, p.StartTicks
	}
	return pid, 0
}
