package meta

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/proc"
)

// LaunchesFile is the launch-records file in the state dir.
const LaunchesFile = "launches.json"

// Launches is the on-disk content of launches.json.
type Launches struct {
	Schema  int      `json:"schema"`
	Records []Launch `json:"launches"`
}

// Launch is what agentctl knows about a session it launched or resumed: inputs,
// the verified identity of the agent process (PID + exact start time + boot id),
// and the outcome once the supervisor (or lazy finalisation) observed it. It never
// holds a status: status is derived at read time from the process and the agent's
// own files.
type Launch struct {
	ID         string            `json:"id"`   // launch id (l-<hex>)
	Kind       string            `json:"kind"` // launch | resume
	Adapter    string            `json:"adapter"`
	SessionID  string            `json:"session_id,omitempty"`
	ResumedAs  string            `json:"resumed_as,omitempty"`
	Model      string            `json:"model,omitempty"`
	Cwd        string            `json:"cwd"`
	Prompt     string            `json:"prompt,omitempty"`
	Group      string            `json:"group,omitempty"`
	Spec       string            `json:"spec,omitempty"`
	Branch     string            `json:"branch,omitempty"`
	Worktree   string            `json:"worktree,omitempty"`
	Meta       map[string]string `json:"meta,omitempty"`
	Argv       []string          `json:"argv,omitempty"`
	Log        string            `json:"log,omitempty"`
	OnCreate   string            `json:"on_create,omitempty"`
	OnComplete string            `json:"on_complete,omitempty"`

	// The agent process.
	PID        int    `json:"pid,omitempty"`
	PGID       int    `json:"pgid,omitempty"`
	StartTicks uint64 `json:"start_ticks,omitempty"`
	BootID     string `json:"boot_id,omitempty"`
	// The supervisor process (owner of the auto-lock until the agent is known).
	SupervisorPID   int    `json:"supervisor_pid,omitempty"`
	SupervisorStart uint64 `json:"supervisor_start,omitempty"`
	// The launching command, which owns the record until the supervisor runs.
	LauncherPID   int    `json:"launcher_pid,omitempty"`
	LauncherStart uint64 `json:"launcher_start,omitempty"`

	Bin        string   `json:"bin,omitempty"`
	EnvNames   []string `json:"env_names,omitempty"`   // names of variables changed for the agent, never values
	LogOffset  int64    `json:"log_offset,omitempty"`  // where the agent's output starts in Log
	BaseBranch string   `json:"base_branch,omitempty"` // --worktree launches
	BaseCommit string   `json:"base_commit,omitempty"` // matrix launches: the commit every slot started from
	User       string   `json:"user,omitempty"`
	// Home is the --home the run was launched with (its HOME, where its own
	// files are); "" is the launching user's own home. agentctl's state never
	// moves with it, so readers and finalisers look for the run's files here.
	Home string `json:"home,omitempty"`
	// Webhook target resolved at launch time (env wins over config), so that a lazy
	// finaliser run from another shell delivers to the same place.
	WebhookURL    string `json:"webhook_url,omitempty"`
	WebhookSecret string `json:"webhook_secret,omitempty"`

	// Gateway is an OpenClaw launch's handle on its gateway: there is no local
	// process, so no PID (docs/agents/openclaw.md §6.1).
	Gateway *GatewayInfo `json:"gateway,omitempty"`

	// Background: a Claude Code background session (`launch --background`,
	// docs/agents/claude-code.md §4.5) that Claude's daemon hosts; JobID is
	// Claude's short id for it (`claude attach <job_id>`), ClaudeRoot the
	// config root whose jobs/ holds its record.
	Background bool   `json:"background,omitempty"`
	JobID      string `json:"job_id,omitempty"`
	ClaudeRoot string `json:"claude_root,omitempty"`

	// Input is the FIFO a kept-open run reads its commands from (`launch
	// --keep-open`: pi in RPC mode, docs/agents/pi.md §13); "" for a one-shot
	// run, whose input is the prompt alone.
	Input string `json:"input,omitempty"`

	// Budget is what the run may take (launch --max-*); BudgetBase what the
	// resumed session had taken before this run; Breach the limit it went over,
	// set once; ExitReason says why agentctl ended it (budget:tokens, …).
	Budget     *Budget `json:"budget,omitempty"`
	BudgetBase *Usage  `json:"budget_base,omitempty"`
	Breach     *Breach `json:"budget_breach,omitempty"`
	ExitReason string  `json:"exit_reason,omitempty"`

	Init   *InitInfo   `json:"init,omitempty"`
	Result *ResultInfo `json:"result,omitempty"`
	Stop   *StopInfo   `json:"stop,omitempty"`
	// OnCreateResult / OnCompleteResult: "ok", "exit N", "timeout" or an error.
	OnCreateResult   string `json:"on_create_result,omitempty"`
	OnCompleteResult string `json:"on_complete_result,omitempty"`

	LaunchedAt    time.Time  `json:"launched_at"`
	ConfirmedAt   *time.Time `json:"confirmed_at,omitempty"`
	EndedAt       *time.Time `json:"ended_at,omitempty"`
	ExitCode      *int       `json:"exit_code,omitempty"`
	Failure       string     `json:"failure,omitempty"` // startup/run failure class and message
	StopRequested *time.Time `json:"stop_requested,omitempty"`
	FinalisedAt   *time.Time `json:"finalised_at,omitempty"`
	NotifiedAt    *time.Time `json:"notified_at,omitempty"`
	// Ending is the slow half of finalising (on-complete, the webhook), owed
	// once FinalisedAt is set; nil when nothing is owed.
	Ending *Ending `json:"ending,omitempty"`
}

// Ending tracks the slow half of finalising a launch, which runs outside every
// lock in whichever process took it — the supervisor, or a detached
// `agentctl __finalise` that a reading command started so that it never waits
// on a hook, a webhook or a gateway. A holder that died leaves the work to the
// next command that notices.
type Ending struct {
	// PID and Start identify the process doing the work now (0: nobody yet).
	PID   int    `json:"pid,omitempty"`
	Start uint64 `json:"start,omitempty"`
	// HookStartedAt is set before on-complete starts: a holder that dies while
	// the hook runs leaves it run once, never twice.
	HookStartedAt *time.Time `json:"hook_started_at,omitempty"`
	DoneAt        *time.Time `json:"done_at,omitempty"`
}

// Agent identifies the launched agent's process, for proc.Check.
func (l Launch) Agent() proc.ID {
	return proc.ID{PID: l.PID, StartTicks: l.StartTicks, BootID: l.BootID}
}

// ReadLaunches returns the launch records without taking the lock (read-only use by
// discovery). A missing file is an empty list.
func (s *Store) ReadLaunches() ([]Launch, error) {
	var l Launches
	if err := s.Read(LaunchesFile, &l); err != nil {
		return nil, err
	}
	return l.Records, nil
}

// GatewayInfo is where an OpenClaw run lives: the gateway, the session's
// transcript generation (sessionId), the run, and the device identity that
// started it (the only one allowed to abort it without admin scope).
type GatewayInfo struct {
	URL       string `json:"url"`
	SessionID string `json:"session_id,omitempty"`
	RunID     string `json:"run_id,omitempty"`
	DeviceID  string `json:"device_id,omitempty"`
}

// InitInfo is what the agent said about itself when it confirmed the session.
type InitInfo struct {
	Model          string `json:"model,omitempty"`
	PermissionMode string `json:"permission_mode,omitempty"`
	APIKeySource   string `json:"api_key_source,omitempty"`
	Version        string `json:"version,omitempty"`
}

// ResultInfo is the agent's own final result line, when it wrote one.
type ResultInfo struct {
	Subtype        string   `json:"subtype,omitempty"`
	IsError        bool     `json:"is_error,omitempty"`
	APIErrorStatus int      `json:"api_error_status,omitempty"`
	NumTurns       int      `json:"num_turns,omitempty"`
	TotalCostUSD   *float64 `json:"total_cost_usd,omitempty"`
	TerminalReason string   `json:"terminal_reason,omitempty"`
	Text           string   `json:"result,omitempty"`
}

// StopInfo records what `agentctl stop` did.
type StopInfo struct {
	RequestedAt  time.Time `json:"requested_at"`
	Signals      []string  `json:"signals,omitempty"`
	ExitObserved bool      `json:"exit_observed"`
}

// DefaultLaunchTTL is how long a launch record outlives its session.
const DefaultLaunchTTL = 7 * 24 * time.Hour

// Find returns the record with this launch id.
func (l *Launches) Find(id string) *Launch { return FindLaunch(l.Records, id) }

// FindLaunch returns the record in recs with this launch id, or nil. The
// pointer is into recs.
func FindLaunch(recs []Launch, id string) *Launch {
	for i := range recs {
		if recs[i].ID == id {
			return &recs[i]
		}
	}
	return nil
}

// CurrentSessionID is the session id a record refers to now: the id a resume
// was answered under, when it differs from the one asked for, else SessionID.
func (l *Launch) CurrentSessionID() string {
	if l.ResumedAs != "" {
		return l.ResumedAs
	}
	return l.SessionID
}

// Owned reports whether some process that owns the record is verifiably alive:
// the agent, the supervisor or the launching command.
func (s *Store) Owned(l *Launch) bool {
	return s.AgentAlive(l) || s.alive(l.SupervisorPID, l.SupervisorStart, "") || s.alive(l.LauncherPID, l.LauncherStart, "")
}

// AgentAlive reports whether the record's agent process is verifiably alive.
func (s *Store) AgentAlive(l *Launch) bool {
	return l.PID > 0 && s.alive(l.PID, l.StartTicks, l.BootID)
}

// UpdateLaunches is Update on launches.json plus lazy TTL eviction: whoever opens
// the file for writing drops records whose session ended more than LaunchTTL ago
// (never one whose agent is alive), and their logs go with them (removed after the
// lock is released).
func (s *Store) UpdateLaunches(fn func(*Launches) (bool, error)) error {
	var logs []string
	err := Update(s, LaunchesFile, func(l *Launches) (bool, error) {
		changed, err := fn(l)
		if err != nil {
			return false, err
		}
		var evicted []Launch
		l.Records, evicted = s.evictLaunches(l.Records)
		for _, r := range evicted {
			if r.Log != "" {
				logs = append(logs, r.Log)
			}
		}
		if changed || len(evicted) > 0 {
			l.Schema = Schema
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	s.removeLogs(logs)
	return nil
}

// EvictLaunches opens launches.json only if something in it has expired.
func (s *Store) EvictLaunches() error {
	recs, err := s.ReadLaunches()
	if err != nil {
		return err
	}
	if _, ev := s.evictLaunches(append([]Launch(nil), recs...)); len(ev) == 0 {
		return nil
	}
	return s.UpdateLaunches(func(*Launches) (bool, error) { return false, nil })
}

func (s *Store) launchTTL() time.Duration {
	if s.LaunchTTL > 0 {
		return s.LaunchTTL
	}
	return DefaultLaunchTTL
}

func (s *Store) evictLaunches(recs []Launch) (kept, evicted []Launch) {
	now := s.now()
	ttl := s.launchTTL()
	kept = recs[:0]
	for _, r := range recs {
		var gone bool
		switch {
		case r.EndedAt != nil:
			gone = now.Sub(*r.EndedAt) > ttl
		default:
			// Never finalised (no command noticed the end): age from the launch.
			gone = now.Sub(r.LaunchedAt) > ttl
		}
		if gone && !s.Owned(&r) {
			evicted = append(evicted, r)
			continue
		}
		kept = append(kept, r)
	}
	return kept, evicted
}

// removeLogs deletes evicted launch logs, but only files inside the state dir's
// logs/ directory: a record is not allowed to point agentctl at anything else.
func (s *Store) removeLogs(paths []string) {
	dir := filepath.Join(s.Dir, "logs") + string(filepath.Separator)
	for _, p := range paths {
		if !strings.HasPrefix(filepath.Clean(p), dir) {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.warn("remove expired launch log %s: %v", p, err)
		}
	}
}

// LogPath is the launch log of a launch id.
func (s *Store) LogPath(launchID string) string {
	return filepath.Join(s.Dir, "logs", launchID+".log")
}
