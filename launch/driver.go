// Package launch is the write side: it starts agents under a detached supervisor
// (`agentctl __supervise`), confirms the agent's real session id before anyone is
// told "launched", records the verified agent PID, and finalises the launch when
// the agent exits — or lazily, from whichever command notices first, when the
// supervisor died. It also stops, resumes and waits. There is no daemon.
package launch

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/meta"
)

// Launch kinds.
const (
	KindLaunch = "launch"
	KindResume = "resume"
)

// Request is what a driver needs to build an agent's command line.
type Request struct {
	Kind      string // KindLaunch or KindResume
	SessionID string // resume: the session to continue
	// SessionPath is the resumed session's own file (pi resumes by path) and
	// SessionModel its recorded model (opencode resumes with it); both from
	// the read side.
	SessionPath, SessionModel string
	// Fork: resume into a new session, leaving the old one as it was (only
	// where the agent can; see CanFork).
	Fork               bool
	LaunchID           string // agentctl's launch id ("" while only validating)
	Prompt             string // the composed prompt (for agents that title a session by it)
	Cwd                string // realpath, must exist ("" for openclaw: the gateway's workspace)
	Model              string
	PermissionMode     string
	AppendSystemPrompt string
	Sandbox            bool     // the user vouched this machine is a sandbox (claude root guard)
	Background         bool     // claude-code: a background session (`claude --bg`)
	UserEnv            []string // --env K=V, applied last
	Environ            []string // the launching command's environment
	Euid               int
	Home               string // --home: the agent's HOME ("" keeps the inherited one)
	Config             *meta.Config
	LookPath           func(string) (string, error)
	// KeepOpen: the run stays open for messages (`launch --keep-open`): the
	// agent reads commands from its input, the prompt being the first
	// (Keeper).
	KeepOpen bool
}

// getenv reads the request's base environment.
func (r *Request) getenv(k string) string {
	v, _ := lookupEnv(r.Environ, k)
	return v
}

func (r *Request) adapterConfig(name string) meta.AdapterConfig {
	if r.Config == nil {
		return meta.AdapterConfig{}
	}
	return r.Config.Adapters[name]
}

// Plan is the exact command a driver wants run. The prompt is never in Args: it
// goes to the agent's stdin from a 0600 file.
type Plan struct {
	Bin            string
	Args           []string
	Env            []string
	EnvNames       []string // variables changed from the launcher's environment
	SessionID      string   // pre-assigned id ("" when the agent picks it)
	ConfirmTimeout time.Duration
	// Input: the agent reads commands from a FIFO that stays open (KeepOpen):
	// the supervisor writes the Keeper's first commands, send the later ones.
	Input bool
}

// Outcome classifies how a run ended (or failed to start): Class is "" for a
// success, else a short class such as "auth" or "bad-flag"; Message is one line
// for a human.
type Outcome struct {
	Class   string
	Message string
	Result  *meta.ResultInfo
}

// Failure renders the outcome for the launch record ("" for a success).
func (o Outcome) Failure() string {
	if o.Class == "" {
		return ""
	}
	return o.Class + ": " + o.Message
}

// Driver knows one agent's launch mechanics (docs/agents/*.md §6–8).
type Driver interface {
	Name() string
	// Plan builds the command for a launch or resume. Errors are user-facing and
	// say what to fix (binary missing, root guard, …); no state is written yet.
	Plan(req *Request) (*Plan, error)
	// Confirm looks at the agent's complete output lines so far. ok means the
	// agent itself confirmed sessionID (the pre-assigned one, want, or — for a
	// resume answered under a new id — another one).
	Confirm(lines [][]byte, want string) (sessionID string, init *meta.InitInfo, ok bool)
	// Classify explains a run that ended, from its last output lines.
	Classify(lines [][]byte, exitCode int, stopRequested bool) Outcome

	// What the commands may do with the agent's sessions, decided here rather
	// than by adapter name in each command (policy.go).

	// Gateway reports whether sessions live in a gateway, not a local process:
	// no directory to run in or lock, no PID; stop and the run's end go through
	// the gateway.
	Gateway() bool
	// Workdir picks the directory a launch is resolved from, given --cwd,
	// --worktree and the config's cwd ("": where we are), and whether the agent
	// runs in it.
	Workdir(cwd, worktree, configCwd string) (dir string, runsThere bool, err error)
	// StopPlan is the agent's stop escalation (agents/*.md §8).
	StopPlan(force bool) StopPlan
	// Stoppable says whether a session may be stopped now, or why not.
	Stoppable(s Seen, force bool) error
	// Resumable refuses a session that is still live (*BusyError) and returns
	// the directory to resume it in.
	Resumable(s Seen, force bool) (cwd string, err error)
}

// Keeper is a driver whose agent can stay open for messages (`launch
// --keep-open`): it then reads commands on its stdin, a FIFO under the state
// dir that nobody closes, and never exits on its own.
type Keeper interface {
	// FirstInput is what the supervisor writes to the agent's input at start:
	// the prompt as a command, and whatever makes the agent name its session.
	FirstInput(prompt string) ([]byte, error)
}

// Prober is a driver that can also confirm a session from the agent's own store:
// OpenCode's session row appears ~1 s after start, while its first output line
// waits for the first model reply (docs/agents/opencode.md §6). The supervisor asks it about
// every 200 ms until the confirmation window closes.
type Prober interface {
	Probe(p *Probe) (sessionID string, ok bool)
}

// Probe is what a Prober may look at: the launch as recorded and the agent's
// own environment (which names its data dirs).
type Probe struct {
	Kind, Want, Cwd string
	Argv, Environ   []string
	Spawned         time.Time
}

// StopPlan is an agent's stop escalation (docs/agents/*.md §8): which signals, how
// long to wait after each, and whether SIGINT goes to the PID alone.
type StopPlan struct {
	Steps        []StopStep
	IntToPIDOnly bool
}

// StopPlanFor returns the escalation of adapter (Driver.StopPlan); nil Steps
// means the default (SIGINT 3 s, SIGTERM 5 s, SIGKILL).
func StopPlanFor(adapter string, force bool) StopPlan {
	drv, err := DriverFor(adapter)
	if err != nil {
		return StopPlan{}
	}
	return drv.StopPlan(force)
}

// DriverFor returns the launch driver of an adapter, or an error that says which
// adapters agentctl can launch today.
func DriverFor(adapter string) (Driver, error) {
	for _, d := range drivers() {
		if d.Name() == adapter {
			return d, nil
		}
	}
	if agents.Known(adapter) {
		return nil, NotLaunchedError(adapter)
	}
	return nil, agents.UnknownError(adapter)
}

// NotLaunchedError is the error for an agent agentctl reads but does not start
// (its row's Launch is false): it names the ones it does start.
func NotLaunchedError(adapter string) error {
	var can []string
	for _, a := range agents.All() {
		if a.Launch {
			can = append(can, a.Name)
		}
	}
	return fmt.Errorf("agentctl lists, inspects and counts %s sessions but does not start or resume them yet; start it yourself, or use one of: %s",
		adapter, strings.Join(can, ", "))
}

// drivers binds every agent whose row says Launch to its driver (a test pins
// the two).
func drivers() []Driver {
	return []Driver{Claude{}, Codex{}, OpenCode{}, Pi{}, PiRust{}, OpenClaw{}, Gemini{}, Qwen{}, Copilot{}}
}

// lookupEnv finds k in a KEY=VALUE list (the last one wins, as in exec).
func lookupEnv(env []string, k string) (string, bool) {
	v, ok := "", false
	for _, kv := range env {
		if n, val, found := strings.Cut(kv, "="); found && n == k {
			v, ok = val, true
		}
	}
	return v, ok
}

// envSet is an ordered environment that tracks which names it changed.
type envSet struct {
	vars    []string
	changed map[string]bool
}

func newEnvSet(base []string) *envSet {
	e := &envSet{changed: map[string]bool{}}
	seen := map[string]int{}
	for _, kv := range base {
		n, _, ok := strings.Cut(kv, "=")
		if !ok || n == "" {
			continue
		}
		if i, dup := seen[n]; dup {
			e.vars[i] = kv
			continue
		}
		seen[n] = len(e.vars)
		e.vars = append(e.vars, kv)
	}
	return e
}

// ownSecrets are agentctl's own secrets: the launcher's copy never reaches an
// agent, whose tools could read it (the launch record carries the webhook
// secret to the supervisor). Config env and --env may still set them.
var ownSecrets = []string{"AGENTCTL_WEBHOOK_SECRET"}

// agentBase is base without agentctl's own secrets: where every agent's
// environment starts.
func agentBase(base []string) *envSet {
	e := newEnvSet(base)
	for _, k := range ownSecrets {
		e.unset(k)
	}
	return e
}

func (e *envSet) get(k string) (string, bool) { return lookupEnv(e.vars, k) }

func (e *envSet) set(k, v string) {
	if old, ok := e.get(k); ok && old == v {
		return
	}
	e.unset(k)
	e.vars = append(e.vars, k+"="+v)
	e.changed[k] = true
}

func (e *envSet) unset(k string) {
	out := e.vars[:0]
	for _, kv := range e.vars {
		if n, _, _ := strings.Cut(kv, "="); n == k {
			e.changed[k] = true
			continue
		}
		out = append(out, kv)
	}
	e.vars = out
}

func (e *envSet) names() []string {
	var out []string
	for k := range e.changed {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}

// ParseEnv checks --env K=V arguments.
func ParseEnv(kvs []string) error {
	for _, kv := range kvs {
		n, _, ok := strings.Cut(kv, "=")
		if !ok || n == "" || strings.ContainsAny(n, " \t\n") {
			return fmt.Errorf("--env %q: want NAME=VALUE", kv)
		}
	}
	return nil
}

// executable reports whether path is a regular file with an execute bit.
func executable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}
