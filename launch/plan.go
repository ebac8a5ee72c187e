package launch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/locks"
)

// SummaryMax is how much of the prompt a launch record keeps (list shows it,
// webhooks send it).
const SummaryMax = 4096

// Ask is what the user asked for, flags parsed: a single launch, a group
// (several --adapter, or --model a,b), a matrix file, or a resume. PlanSlots
// turns every kind into one Spec per slot; a single launch is a group of one
// that runs where it is asked to instead of in a worktree of its own.
type Ask struct {
	// Slots are the agents in command-line (or matrix) order; none is one slot
	// of DefaultAdapter. A slot without an adapter gets DefaultAdapter.
	Slots []Slot
	// Matrix: the slots come from a matrix file, a group even with one slot.
	Matrix         bool
	DefaultAdapter string
	// ConfigAdapter and ConfigModel are config's "adapter" and "model": the
	// model applies to a slot of that adapter that names no model.
	ConfigAdapter, ConfigModel string
	// Background is --background: in a group, for the claude-code slots.
	Background bool
	// Cwd is --cwd (or the matrix file's cwd) as given, ConfigCwd config's
	// cwd, Worktree a single launch's --worktree REPO; Expand expands ~ in
	// them. A resume runs in Agent.Cwd instead (the session's directory).
	Cwd, ConfigCwd, Worktree string
	Expand                   func(string) string
	// Agent is what every slot shares: Kind, the agent flags, hooks, budget,
	// webhook, a resume's session.
	Agent Spec
	// Prompt is the prompt as the user gave it (stdin already read) and its
	// attachments; PlanSlots fills in Cwd.
	Prompt PromptInput
	// CommandOnly: only the command line is wanted (resume --print-command),
	// which the prompt is never part of; it may be missing.
	CommandOnly bool
}

// Group says whether the slots each get a worktree of their own.
func (a Ask) Group() bool { return a.Matrix || len(a.Slots) > 1 }

// PlanSlots builds the one Spec per slot that a launch, a group launch, a
// matrix launch and a resume all start from, and checks each of them
// without writing anything (Plan): one bad slot and nothing is launched. The
// prompt, its summary and the spec path are composed here, once, for all.
func (l *Launcher) PlanSlots(ctx context.Context, a Ask) ([]SlotPlan, error) {
	slots := append([]Slot(nil), a.Slots...)
	if len(slots) == 0 {
		slots = []Slot{{}}
	}
	group := a.Group()
	// In a group every error names its slot and says that nothing started.
	slotErr := func(i int, s Slot, err error) error {
		if !group {
			return err
		}
		return &slotError{fmt.Sprintf("slot %d (%s)", i+1, s.Adapter), err}
	}
	specs := make([]Spec, len(slots))
	for i, s := range slots {
		if s.Adapter == "" {
			s.Adapter = a.DefaultAdapter
		}
		if !agents.Known(s.Adapter) {
			err := &InputError{agents.UnknownError(s.Adapter).Error()}
			if group {
				return nil, &slotError{fmt.Sprintf("slot %d", i+1), err}
			}
			return nil, err
		}
		if !agents.Get(s.Adapter).Launch {
			return nil, slotErr(i, s, &InputError{NotLaunchedError(s.Adapter).Error()})
		}
		if group && agents.Get(s.Adapter).Gateway {
			return nil, inputErrorf("slot %d: %s runs in its gateway's workspace, not in a worktree; it cannot be part of a comparison group", i+1, s.Adapter)
		}
		sp := a.Agent
		sp.Adapter = s.Adapter
		if s.Model != "" {
			sp.Model = s.Model
		} else if group {
			// A group's --model binds to the --adapter before it, never to
			// every slot.
			sp.Model = ""
		}
		if sp.Model == "" && s.Adapter == a.ConfigAdapter {
			sp.Model = a.ConfigModel
		}
		// --background applies to the slots of a group whose agent has
		// background sessions (claude-code); a matrix slot may ask for it on
		// its own (background: true).
		sp.Background = s.Background || (a.Background && (!group || agents.Get(s.Adapter).Background))
		if s.Budget != nil {
			b := s.Budget.Merge(a.Agent.Budget)
			sp.Budget = &b
		}
		specs[i] = sp
		slots[i] = s
	}
	dir, runsThere, err := a.dir(slots[0].Adapter)
	if err != nil {
		return nil, err
	}
	in := a.Prompt
	// --file paths are shown relative to the directory even when the agent
	// does not run there (openclaw).
	in.Cwd = dir
	if !runsThere {
		dir = ""
	}
	full := in.Prompt
	if !a.CommandOnly {
		if full, err = BuildPrompt(ctx, in); err != nil {
			return nil, err
		}
	}
	summary, specPath := Summary(in.Prompt, full), SpecPath(in.Spec)
	out := make([]SlotPlan, len(specs))
	for i := range specs {
		sp := &specs[i]
		sp.Prompt, sp.Summary, sp.SpecPath, sp.Cwd = full, summary, specPath, dir
		_, plan, err := l.Plan(sp)
		if err != nil {
			return nil, slotErr(i, slots[i], err)
		}
		out[i] = SlotPlan{Slot: slots[i], Spec: *sp, Command: plan}
	}
	return out, nil
}

// SlotPlan is one slot as PlanSlots checked it: the slot as asked (its
// adapter filled in, its model as named: it names the worktree) and its Spec.
type SlotPlan struct {
	Slot    Slot
	Spec    Spec
	Command *Plan // what the agent would run (resume --print-command shows it)
}

// dir is the directory the slots are resolved from (a group: the repository
// whose worktrees they get) as a realpath, and whether the agent runs in it.
func (a Ask) dir(adapter string) (string, bool, error) {
	if a.Agent.Kind == KindResume {
		return a.Agent.Cwd, a.Agent.Cwd != "", nil
	}
	expand := a.Expand
	if expand == nil {
		expand = func(s string) string { return s }
	}
	what, cwd, runsThere := "--cwd", a.Cwd, true
	if a.Group() {
		if cwd == "" {
			cwd = a.ConfigCwd
		}
	} else {
		// The driver's choice among --cwd, --worktree and config cwd.
		drv, err := DriverFor(adapter)
		if err != nil {
			return "", false, err
		}
		if cwd, runsThere, err = drv.Workdir(a.Cwd, a.Worktree, a.ConfigCwd); err != nil {
			return "", false, err
		}
		if a.Worktree != "" {
			what = "--worktree"
		}
	}
	if cwd == "" {
		var err error
		if cwd, err = os.Getwd(); err != nil {
			return "", false, err
		}
	}
	real, err := locks.Canonical(expand(cwd))
	if err != nil {
		return "", false, inputErrorf("%s %s: %v", what, cwd, err)
	}
	return real, runsThere, nil
}

// Summary is what a launch record keeps of the prompt: the prompt as the user
// typed it, or the composed one when that is blank (--issue alone), cut to
// SummaryMax bytes on a character boundary.
func Summary(prompt, full string) string {
	s := prompt
	if strings.TrimSpace(s) == "" {
		s = full
	}
	n := SummaryMax
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// SpecPath is --spec as the launch record keeps it: absolute, because the
// record is read from other directories (compare, accept, the webhook).
func SpecPath(spec string) string {
	if spec == "" {
		return ""
	}
	if abs, err := filepath.Abs(spec); err == nil {
		return abs
	}
	return spec
}

// slotError names the slot of a group whose check failed; nothing was
// launched. It unwraps to the cause, whose type says the exit code.
type slotError struct {
	slot string
	err  error
}

func (e *slotError) Error() string { return e.slot + ": " + e.err.Error() + "; nothing was launched" }
func (e *slotError) Unwrap() error { return e.err }
