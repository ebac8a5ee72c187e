package meta

import (
	"time"
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

	LaunchedAt    time.Time  `json:"launched_at"`
	ConfirmedAt   *time.Time `json:"confirmed_at,omitempty"`
	EndedAt       *time.Time `json:"ended_at,omitempty"`
	ExitCode      *int       `json:"exit_code,omitempty"`
	Failure       string     `json:"failure,omitempty"` // startup/run failure class and message
	StopRequested *time.Time `json:"stop_requested,omitempty"`
	FinalisedAt   *time.Time `json:"finalised_at,omitempty"`
	NotifiedAt    *time.Time `json:"notified_at,omitempty"`
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
