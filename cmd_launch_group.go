package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentctl/agentctl/launch"
	"github.com/agentctl/agentctl/locks"
)

// groupSlots are the slots the flags ask for: the positional ADAPTER, then each
// --adapter with its models (one slot per model); --adapter before the command
// name counts too. Fewer than two slots is a single launch.
func (o launchOptions) groupSlots() []launch.Slot {
	var args []slotArg
	if len(o.Args) == 1 {
		args = append(args, slotArg{Adapter: o.Args[0]})
	}
	args = append(args, o.Slots...)
	if len(o.Slots) == 0 && len(o.Adapters) > 1 {
		for _, a := range o.Adapters {
			args = append(args, slotArg{Adapter: a})
		}
	}
	var slots []launch.Slot
	for _, a := range args {
		if len(a.Models) == 0 {
			slots = append(slots, launch.Slot{Adapter: a.Adapter})
		}
		for _, m := range a.Models {
			slots = append(slots, launch.Slot{Adapter: a.Adapter, Model: m})
		}
	}
	return slots
}

// slotOut is one slot's outcome for the launch output.
type slotOut struct {
	slot launch.Slot
	res  *launch.Result
	err  error
}

// runGroupLaunch is a comparison launch (README "Comparing agents"): the
// slots planned and checked (PlanSlots), then every worktree made, then the
// agents started in parallel.
func runGroupLaunch(ctx context.Context, st *starter, o launchOptions, planned []launch.SlotPlan, base string) error {
	s, l := st.s, st.launcher
	slots := make([]launch.Slot, len(planned))
	for i, p := range planned {
		slots[i] = p.Slot
	}
	g, err := launch.PrepareGroup(ctx, planned[0].Spec.Cwd, base, slots)
	if err != nil {
		return prefixErr(inputErr(err), "", "nothing was launched")
	}
	specs := make([]*launch.Spec, len(planned))
	for i, sl := range g.Slots {
		sp := planned[i].Spec
		sp.Cwd, sp.Worktree, sp.Branch, sp.Group = sl.Path, sl.Path, sl.Branch, g.ID
		sp.BaseBranch, sp.BaseCommit = g.BaseRef, g.Base
		specs[i] = &sp
	}
	// Every slot's directory is locked at once before any agent starts: one
	// locked and nothing is launched, every worktree and branch removed.
	lockWarns, err := l.LockAll(specs)
	if err != nil {
		which := ""
		var ce *locks.ConflictError
		if errors.As(err, &ce) {
			for i, sp := range specs {
				if sp.Cwd == ce.Lock.Directory {
					which = fmt.Sprintf("slot %d (%s): %s", i+1, sp.Adapter, sp.Cwd)
				}
			}
		}
		if errs := launch.RemoveSlots(g.Repo, g.Slots); len(errs) > 0 {
			warn(s, fmt.Sprintf("remove the worktrees of group %s: %v (see agentctl worktree list %s)", g.ID, errors.Join(errs...), g.Repo))
		}
		return prefixErr(inputErr(err), which, "nothing was launched")
	}
	for _, w := range lockWarns {
		warn(s, w)
	}
	outs := make([]slotOut, len(g.Slots))
	var wg sync.WaitGroup
	for i := range g.Slots {
		wg.Add(1)
		go func(i int, sp launch.Spec) {
			defer wg.Done()
			// Start releases the lock LockAll took unless the agent starts.
			res, err := l.Start(ctx, sp)
			outs[i] = slotOut{slot: g.Slots[i], res: res, err: err}
		}(i, *specs[i])
	}
	wg.Wait()
	failed := 0
	var js []launchOut
	for _, so := range outs {
		if so.err != nil {
			failed++
			// The agent never confirmed: its worktree holds nothing of value.
			if errs := launch.RemoveSlots(g.Repo, []launch.Slot{so.slot}); len(errs) > 0 {
				warn(s, fmt.Sprintf("remove the worktree %s of a failed slot: %v", so.slot.Path, errs[0]))
			}
			if o.JSON {
				js = append(js, launchOut{Adapter: so.slot.Adapter, Model: so.slot.Model, Group: g.ID, Error: so.err.Error()})
			} else {
				printHuman(s.Out, "✗ %s%s — %v\n", so.slot.Adapter, modelParen(so.slot.Model), so.err)
			}
			continue
		}
		for _, w := range so.res.Warnings {
			warn(s, w)
		}
		r := so.res.Record
		model := r.Model
		if model == "" && r.Init != nil {
			model = r.Init.Model
		}
		if o.JSON {
			js = append(js, launchOut{ID: r.CurrentSessionID(), Adapter: r.Adapter, Model: model, Cwd: r.Cwd, Group: r.Group,
				Branch: r.Branch, PID: r.PID, Log: r.Log, LaunchID: r.ID})
		} else {
			printHuman(s.Out, "%s%s → %s (%s)\n", r.Adapter, modelParen(model), shortHome(r.Cwd, st.home), r.CurrentSessionID())
		}
		if so.res.OnCreateErr != nil {
			failed++
			warn(s, fmt.Sprintf("%v; the agent keeps running (%s)", so.res.OnCreateErr, r.CurrentSessionID()))
		}
	}
	if o.JSON {
		if err := writeJSON(s.Out, js); err != nil {
			return err
		}
	} else {
		printHuman(s.Out, "group %s (base %.12s); see: agentctl compare %s\n", g.ID, g.Base, g.ID)
	}
	if o.Wait {
		code := 0
		for _, so := range outs {
			if so.err != nil {
				continue
			}
			end, err := l.WaitLaunch(ctx, so.res.Record.ID)
			if err != nil {
				return &exitError{exitFailed, err}
			}
			if end.ExitCode == nil || *end.ExitCode != 0 {
				code = exitFailed
			}
			if !o.JSON {
				printHuman(s.Out, "%s ended (%s)%s\n", so.res.Record.CurrentSessionID(), launch.ExitStatus(end.ExitCode), failureSuffix(end))
			}
		}
		if code != 0 {
			return &exitError{code, fmt.Errorf("not every slot of %s exited 0; see agentctl compare %s", g.ID, g.ID)}
		}
	}
	if failed > 0 {
		return &exitError{exitFailed, fmt.Errorf("%d of %d slots failed", failed, len(outs))}
	}
	return nil
}

func modelParen(m string) string {
	if m == "" {
		return ""
	}
	return " (" + m + ")"
}

// prefixErr keeps err's exit code and adds context before and after its message.
func prefixErr(err error, before, after string) error {
	ee, ok := err.(*exitError)
	if !ok || ee.err == nil {
		return err
	}
	msg := ee.err.Error()
	if before != "" {
		msg = before + ": " + msg
	}
	if after != "" {
		msg += "; " + after
	}
	return &exitError{ee.code, fmt.Errorf("%s", msg)}
}
