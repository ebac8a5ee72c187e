package main

import (
	"context"
	"fmt"

	"github.com/agentctl/agentctl/discover"
)

// ids is list -q (full ids, one per line) or --count (the number, 0
// included): the scriptable forms, e.g. `list --status waiting,blocked -q`.
func (l *lister) ids(ctx context.Context, f discover.Filter, count bool) (failed bool, err error) {
	e := l.e
	// Only live statuses asked for (the usual "who needs me"): the adapters may
	// skip ended sessions, as for a plain list.
	e.onlyAlive = !f.All
	for _, st := range f.Statuses {
		e.onlyAlive = e.onlyAlive && discover.Alive(st)
	}
	res, ls := e.listing(ctx)
	f.Now = e.s.now()
	ls.Filter(f)
	if count {
		_, err = fmt.Fprintln(e.s.Out, ls.Len())
		return len(res.Warnings) > 0, err
	}
	failed = len(res.Warnings) > 0
	for i := 0; i < ls.Len(); i++ {
		s := ls.At(i)
		if !idLineSafe(s.ID) {
			warnUnsafeID(e.s, s.Adapter, s.ID)
			failed = true
			continue
		}
		if _, err := fmt.Fprintln(e.s.Out, s.ID); err != nil {
			return false, err
		}
	}
	return failed, nil
}

// warnUnsafeID is the warning for an id left out of a one-per-line listing:
// printed, its control characters would forge lines (another session's id
// on a line of its own, for `list -q | xargs agentctl stop`).
func warnUnsafeID(s *host, adapter, id string) {
	warn(s, fmt.Sprintf("%s session %s left out: its id has control characters (see list --json)", adapter, id))
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
