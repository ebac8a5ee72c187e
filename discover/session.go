// Package discover is the read side: which agent sessions exist on this machine and
// what each is doing, asked of the agents' own files, registries, gateways and the
// live process table at the moment a command runs. Nothing here writes, except the
// parse index under the state dir's cache/, which is a pure cache.
package discover

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/agentctl/agentctl/meta"
)

// Status values (README "JSON" and "How status is decided").
const (
	StatusRunning = "running"
	StatusIdle    = "idle"
	StatusWaiting = "waiting"
	StatusStopped = "stopped"
	StatusFailed  = "failed"
	StatusUnknown = "unknown"
)

// Evidence labels: what a status rests on, strongest first.
const (
	EvidenceLaunchRecord  = "launch-record"
	EvidenceRegistry      = "registry"
	EvidenceArgv          = "argv"
	EvidenceServer        = "server" // the agent's own server API (OpenCode serve/TUI), asked over loopback HTTP
	EvidenceProcess       = "process"
	EvidenceStaleRegistry = "stale-registry"
	EvidenceGateway       = "gateway"
	EvidenceTranscript    = "transcript"
	EvidenceNone          = "none"
)

// EvidenceJobRecord: the agent's own record of a background job that outlives
// its process (Claude Code's jobs/<short>/state.json).
const EvidenceJobRecord = "job-record"

// TimeOrNil is &t, or nil for the zero time: a Session's optional times.
func TimeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// MilliOrNil is the UTC time of Unix milliseconds ms, or nil when ms <= 0
// (unknown).
func MilliOrNil(ms int64) *time.Time {
	if ms <= 0 {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}

// Alive reports whether a status means the agent process is alive.
func Alive(status string) bool {
	switch status {
	case StatusRunning, StatusIdle, StatusWaiting, StatusUnknown:
		return true
	}
	return false
}

// Tokens are the four token classes, de-duplicated as each agent's format requires.
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
}

// Add adds u to t, saturating at the int64 range instead of overflowing.
func (t *Tokens) Add(u Tokens) {
	t.Input = SatAdd(t.Input, u.Input)
	t.Output = SatAdd(t.Output, u.Output)
	t.CacheRead = SatAdd(t.CacheRead, u.CacheRead)
	t.CacheWrite = SatAdd(t.CacheWrite, u.CacheWrite)
}

// MaxTokensPerRequest bounds one request's count of any token class: no model
// reads or writes 10⁹ tokens in one call.
const MaxTokensPerRequest = 1_000_000_000

// UsageOK reports whether one record's usage counts can be true: none negative,
// none absurd (over MaxTokensPerRequest). A record failing it is left out of the
// totals entirely — never clamped (issue 19: a damaged count must not skew them).
func UsageOK(counts ...int64) bool {
	for _, n := range counts {
		if n < 0 || n > MaxTokensPerRequest {
			return false
		}
	}
	return true
}

// SatAdd is a+b clamped to [math.MinInt64, math.MaxInt64]: a total of absurd
// counts stays absurd instead of wrapping round to a negative number.
func SatAdd(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// String is how `status` shows tokens.
func (t Tokens) String() string {
	return fmt.Sprintf("input %d, output %d, cache read %d, cache write %d", t.Input, t.Output, t.CacheRead, t.CacheWrite)
}

// Zero reports whether every class is zero.
func (t Tokens) Zero() bool { return t == Tokens{} }

// Session is one conversation of one agent. Unknown fields are omitted, never faked.
//
// This is the one list of a session's fields: `go generate ./...` writes the
// copies listings need for speed from it (discover/internal/sessiongen: the
// JSON encoder's field sequence in jsonsession_gen.go, the packed listing's
// string fields in session_pack_gen.go), and a test fails while they are stale.
// A string field goes through a packed listing's shared table unless tagged
// `pack:"inline"` (a value few sessions share: written in place) or
// `pack:"own"` (packed.go writes it with code of its own).
type Session struct {
	ID             string `json:"id" pack:"own"`
	Adapter        string `json:"adapter"`
	Status         string `json:"status"`
	Evidence       string `json:"evidence"`
	EvidenceDetail string `json:"evidence_detail,omitempty"`
	// BlockedReason (quota | auth) says the latest turn failed on the agent's
	// account: the user must act before any turn can succeed.
	BlockedReason string     `json:"blocked_reason,omitempty"`
	Inferred      bool       `json:"inferred,omitempty"`
	PID           int        `json:"pid,omitempty"`
	Cwd           string     `json:"cwd,omitempty"`
	LastCwd       string     `json:"last_cwd,omitempty"`
	Model         string     `json:"model,omitempty"`
	Models        []string   `json:"models,omitempty"`
	Title         string     `json:"title,omitempty" pack:"own"`
	Prompt        string     `json:"prompt,omitempty" pack:"inline"`
	StartedAt     *time.Time `json:"started_at,omitempty"`
	LastActivity  *time.Time `json:"last_activity,omitempty"`
	EndedAt       *time.Time `json:"ended_at,omitempty"`
	ExitCode      *int       `json:"exit_code,omitempty"`
	// ExitReason says why agentctl ended a launched run (budget:duration,
	// budget:cost, budget:tokens); Budget is the run's limits.
	ExitReason     string            `json:"exit_reason,omitempty"`
	Budget         *meta.Budget      `json:"budget,omitempty"`
	Tokens         *Tokens           `json:"tokens,omitempty"`
	CostUSD        *float64          `json:"cost_usd,omitempty"`
	CostSource     string            `json:"cost_source,omitempty"` // agent | estimate
	GitBranch      string            `json:"git_branch,omitempty"`
	AgentVersion   string            `json:"agent_version,omitempty"`
	Entrypoint     string            `json:"entrypoint,omitempty"`
	PermissionMode string            `json:"permission_mode,omitempty"`
	Group          string            `json:"group,omitempty"`
	Spec           string            `json:"spec,omitempty"`
	Meta           map[string]string `json:"meta,omitempty"`
	LaunchID       string            `json:"launch_id,omitempty" pack:"inline"`
	Log            string            `json:"log,omitempty" pack:"inline"`
	Host           string            `json:"host,omitempty"`
	// Path is the agent file the session was read from (transcript, rollout, db).
	Path string `json:"path,omitempty" pack:"own"`
	// Kind is "background" for a session the agent's own daemon hosts (Claude
	// Code's `claude --bg`); JobID is the agent's short id for it, accepted
	// wherever an id is. Kind is KindKeptOpen for a run agentctl launched
	// with --keep-open (its input stays open for send).
	Kind  string `json:"kind,omitempty"`
	JobID string `json:"job_id,omitempty" pack:"inline"`
	// CanSend names the channel `agentctl send` would use for this live
	// session (send.ViaTmux, …); empty when it has none. Set by list and
	// status, not by the adapters.
	CanSend string `json:"can_send,omitempty"`
	// Extra carries agent-specific fields for `status` (e.g. tokens_subagents).
	Extra map[string]any `json:"extra,omitempty"`
	// Slots spread Tokens over time by the records' own timestamps (`usage --by
	// day`); nil when the adapter cannot tell. Not part of the JSON.
	Slots Slots `json:"-"`
}

// KindKeptOpen is the Kind of a session launched with `launch --keep-open`:
// the agent reads commands from an input agentctl keeps open (pi in RPC
// mode), so it takes messages and never ends on its own.
const KindKeptOpen = "kept-open"

// Message is one normalised peek item: a user prompt, an assistant message (its
// text and tool calls, each with its result attached), an error or a system event
// such as a compaction. `peek -n` counts Messages, never lines or tool results.
type Message struct {
	TS        time.Time  `json:"ts"`
	Kind      string     `json:"kind"` // user | assistant | error | system
	Text      string     `json:"text,omitempty"`
	Tools     []ToolCall `json:"tools,omitempty"`
	IsError   bool       `json:"is_error,omitempty"`
	MessageID string     `json:"message_id,omitempty"`
	UUID      string     `json:"uuid,omitempty"`
	// Raw holds the native records the item was built from, for --raw.
	Raw []json.RawMessage `json:"-"`
}

// ToolCall is one tool invocation inside an assistant message.
type ToolCall struct {
	ID      string `json:"id,omitempty"`
	Name    string `json:"tool"`
	Summary string `json:"summary,omitempty"`
	// Result is the first non-empty line of the tool's output (≤100 chars); empty
	// with HasResult false while the tool is still running.
	HasResult   bool   `json:"has_result,omitempty"`
	Result      string `json:"result,omitempty"`
	IsError     bool   `json:"is_error,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
}

// Own is the part of the session's tokens and cost that is its own: without
// what a fork copied from the session it was forked from (extra
// tokens_inherited, cost_inherited_usd). Summing Own over sessions counts every
// request once (README "JSON").
func (s *Session) Own() (Tokens, float64) {
	var t Tokens
	var usd float64
	if s.Tokens != nil {
		t = *s.Tokens
	}
	if s.CostUSD != nil {
		usd = *s.CostUSD
	}
	var inh Tokens
	switch v := s.Extra["tokens_inherited"].(type) {
	case Tokens:
		inh = v
	case map[string]any: // a session decoded from JSON
		n := func(k string) int64 { f, _ := v[k].(float64); return int64(f) }
		inh = Tokens{Input: n("input"), Output: n("output"), CacheRead: n("cache_read"), CacheWrite: n("cache_write")}
	}
	t.Input -= inh.Input
	t.Output -= inh.Output
	t.CacheRead -= inh.CacheRead
	t.CacheWrite -= inh.CacheWrite
	if c, ok := s.Extra["cost_inherited_usd"].(float64); ok {
		usd -= c
	}
	return t, usd
}
