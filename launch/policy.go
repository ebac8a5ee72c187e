package launch

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

// Seen is a session as the read side found it, reduced to what the drivers'
// policies need; the commands fill it from what they discovered.
type Seen struct {
	ID, Adapter, Status string
	// Alive: running, idle or waiting. Unknown: the status could not be told.
	Alive, Unknown bool
	// Evidence is how the read side decided the status (its evidence kinds:
	// "launch-record", "registry", "argv", "process", …).
	Evidence string
	PID      int
	Cwd      string
	// Launch is agentctl's record of the session's launch, if it has one.
	Launch *meta.Launch
}

// The read side's evidence kinds the policies tell apart (discover.Evidence*;
// a test of the commands pins the two).
const (
	EvidenceLaunchRecord = "launch-record"
	EvidenceRegistry     = "registry"
	EvidenceArgv         = "argv"
	EvidenceProcess      = "process"
)

// BusyError refuses to act on a session that is still live.
type BusyError struct{ Msg string }

func (e *BusyError) Error() string { return e.Msg }

// local is the policy of agents that run as a local process.
type local struct{}

func (local) Gateway() bool { return false }

// Workdir: --cwd, else the worktree, else the config's cwd; "" means where we are.
func (local) Workdir(cwd, worktree, configCwd string) (string, bool, error) {
	switch {
	case worktree != "":
		return worktree, true, nil
	case cwd != "":
		return cwd, true, nil
	}
	return configCwd, true, nil
}

// StopPlan: the default escalation (SIGINT 3 s, SIGTERM 5 s, SIGKILL).
func (local) StopPlan(bool) StopPlan { return StopPlan{} }

// Stoppable signals only a PID the agent itself (its registry, its argv) or
// agentctl's launch record vouches for; a process-table inference needs --force.
func (local) Stoppable(s Seen, force bool) error {
	if !s.Alive || s.PID <= 0 {
		if s.Unknown {
			return fmt.Errorf("cannot stop %s: no verified process (status unknown, evidence %s)", s.ID, s.Evidence)
		}
		return notRunning(s)
	}
	switch s.Evidence {
	case EvidenceRegistry, EvidenceArgv, EvidenceLaunchRecord:
		return nil
	case EvidenceProcess:
		if force {
			return nil
		}
	}
	return fmt.Errorf("%s's pid %d is only inferred (%s); check it with `agentctl status %s` and use --force to stop it anyway", s.ID, s.PID, s.Evidence, s.ID)
}

// Resumable continues a session from its own start directory, which must still
// exist: the agents look their sessions up by it.
func (local) Resumable(s Seen, force bool) (string, error) {
	if err := refuseLive(s, force); err != nil {
		return "", err
	}
	if s.Cwd == "" {
		return "", fmt.Errorf("%s has no recorded start directory; cannot resume it", s.ID)
	}
	if st, err := os.Stat(s.Cwd); err != nil || !st.IsDir() {
		return "", fmt.Errorf("start directory %s no longer exists; %s only resumes a session from its own directory", s.Cwd, s.Adapter)
	}
	return locks.Canonical(s.Cwd)
}

// refuseLive refuses to resume a live session: two writers would interleave
// turns in one transcript. Only a liveness that is itself a guess (a process-
// table inference, an unknown status) may be overridden with --force.
func refuseLive(s Seen, force bool) error {
	if !s.Alive {
		return nil
	}
	if inferred := s.Evidence == EvidenceProcess || s.Unknown; inferred && force {
		return nil
	}
	pid := ""
	if s.PID > 0 {
		pid = fmt.Sprintf("pid %d, ", s.PID)
	}
	return &BusyError{fmt.Sprintf("%s is still %s (%sevidence %s); wait for it or stop it first — two writers would interleave one transcript", s.ID, s.Status, pid, s.Evidence)}
}

func notRunning(s Seen) error {
	return fmt.Errorf("%s is not running (%s); nothing to stop", s.ID, s.Status)
}

// codexStop: SIGINT is codex's graceful stop (it records turn_aborted); give it
// 10 s before SIGTERM, and send it to the PID only: an npm shim forwards it
// (docs/agents/codex.md §8).
func codexStop(force bool) StopPlan {
	intWait := 10 * time.Second
	if force {
		intWait = 2 * time.Second
	}
	return StopPlan{IntToPIDOnly: true, Steps: []StopStep{{syscall.SIGINT, intWait}, {syscall.SIGTERM, 5 * time.Second}, {syscall.SIGKILL, 2 * time.Second}}}
}

// termFirstStop: `opencode run` ignores SIGINT and pi has no SIGINT handler
// (Node's default kills it without cleanup); SIGTERM is the one signal both
// handle (docs/agents/opencode.md §8, docs/agents/pi.md §8).
func termFirstStop(force bool) StopPlan {
	termWait := 5 * time.Second
	if force {
		termWait = time.Second
	}
	return StopPlan{Steps: []StopStep{{syscall.SIGTERM, termWait}, {syscall.SIGKILL, 2 * time.Second}}}
}

func (Codex) StopPlan(force bool) StopPlan    { return codexStop(force) }
func (OpenCode) StopPlan(force bool) StopPlan { return termFirstStop(force) }
func (Pi) StopPlan(force bool) StopPlan       { return termFirstStop(force) }

// OpenClaw's sessions live in its gateway: no directory, no process.

func (OpenClaw) Gateway() bool { return true }

// Workdir: a turn runs in the gateway's agent workspace, so --cwd and
// --worktree cannot apply; "" resolves --file paths from where we are.
func (OpenClaw) Workdir(cwd, worktree, _ string) (string, bool, error) {
	if cwd != "" || worktree != "" {
		return "", false, &InputError{"openclaw runs its turns in the gateway's agent workspace: --cwd and --worktree do not apply"}
	}
	return "", false, nil
}

// StopPlan does not apply: stop aborts the run through the gateway.
func (OpenClaw) StopPlan(bool) StopPlan { return StopPlan{} }

// Stoppable: the gateway lets only the device that started a run abort it
// (docs/agents/openclaw.md §6.3), so a run agentctl did not start needs --force, which
// connects with operator.admin.
func (OpenClaw) Stoppable(s Seen, force bool) error {
	if !s.Alive {
		return notRunning(s)
	}
	if r := s.Launch; (r == nil || r.EndedAt != nil || r.Gateway == nil) && !force {
		return fmt.Errorf("%s's current run was not started by agentctl, and the gateway lets only the device that started a run abort it; use --force to abort it with operator.admin scope", s.ID)
	}
	return nil
}

// Resumable: a session continues in the gateway's workspace; no directory.
func (OpenClaw) Resumable(s Seen, force bool) (string, error) {
	return "", refuseLive(s, force)
}

// CanFork says whether resume --fork works for an adapter, and if not, why.
// Only Claude Code copies a session into a new one (--fork-session,
// docs/agents/claude-code.md §1.4); Codex, OpenCode and Pi resume in place
// (docs/agents/codex.md §7, opencode.md §7, pi.md §7) and OpenClaw continues
// the gateway's session. The agents table says which (Agent.Fork).
func CanFork(adapter string) error {
	if agents.Get(adapter).Fork {
		return nil
	}
	doc := agents.Get(adapter).Doc
	if doc == "" {
		doc = adapter
	}
	return fmt.Errorf("%s cannot fork a session: it only continues one in place (docs/agents/%s.md); resume it without --fork once it ended", adapter, doc)
}
