package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
)

// What a human listing left out, said after it (issue 37): which agents' data
// dirs were searched, how many sessions the window or the missing -a hid and
// the --since that reaches the newest of them, and a pointer to doctor. It is
// counted only when the adapters have read everything anyway (-a) or when the
// listing is empty and shown on a terminal: a plain non-empty `list`, and an empty
// one piped to a script, never read history for it.

// hintsBefore counts what f leaves out of ls; call it before ls.Filter(f).
func (l *lister) hintsBefore(ls *discover.Listing, f discover.Filter) (discover.Left, bool) {
	if !l.e.onlyAlive {
		return ls.Outside(f), true
	}
	return discover.Left{}, false
}

// hintsAfter prints them: under an empty listing, every line on stdout (as
// "No sessions found." is); under a table, one footer line, on stdout only
// when it is a terminal (pipes and golden output keep the bare table).
func (l *lister) hintsAfter(ctx context.Context, f discover.Filter, shown int, left discover.Left, counted bool) {
	e := l.e
	if shown > 0 {
		if !counted || left.Older == 0 {
			return
		}
		w := e.s.ErrOut
		if e.s.IsTTY() {
			w = e.s.Out
		}
		fmt.Fprintln(w, olderLine(left, f))
		return
	}
	w := e.s.Out
	if !counted && !e.s.IsTTY() {
		// A script or cron job asking for live sessions must not pay for a read
		// of the whole history (list without -a starts from live processes):
		// only a person at a terminal gets the counts.
		l.dataDirs(w)
		fmt.Fprintln(w, "Ended sessions are listed with -a.")
		fmt.Fprintln(w, "Expected some? agentctl doctor checks each agent's install and data dir.")
		return
	}
	if !counted {
		// The adapters may have skipped ended sessions: read them now.
		left = l.history(ctx, f)
	}
	l.dataDirs(w)
	if left.Ended > 0 {
		fmt.Fprintf(w, "%s ended in the last %s (use -a)\n", sessionsN(left.Ended), age(f.Since))
	}
	if left.Older > 0 {
		fmt.Fprintln(w, olderLine(left, f))
	}
	fmt.Fprintln(w, "Expected some? agentctl doctor checks each agent's install and data dir.")
}

// olderLine says how many sessions ended before the window and the --since
// that reaches the newest of them.
func olderLine(left discover.Left, f discover.Filter) string {
	reach := f.Now.Sub(left.Newest)
	days := int(reach/(24*time.Hour)) + 1
	return fmt.Sprintf("%s older than %s not shown, the newest %s ago (use --since %dd)",
		sessionsN(left.Older), age(f.Since), age(reach), days)
}

func sessionsN(n int) string {
	if n == 1 {
		return "1 session"
	}
	return fmt.Sprintf("%d sessions", n)
}

// history is a full listing's Left for f, its warnings passed over (the
// listing just shown said them).
func (l *lister) history(ctx context.Context, f discover.Filter) discover.Left {
	e := l.e
	env := e.newEnv()
	env.Launches, _ = e.store.ReadLaunches()
	env.Large = discover.LargeListing(env)
	_, ls := discover.List(ctx, env, e.adapters, e.timeout)
	if e.only != nil {
		ls.Keep(func(s *discover.Session) bool { return e.only[s.Adapter] })
	}
	return ls.Outside(f)
}

// dataDirs says which of the adapters' data dirs exist, and where the others
// were looked for.
func (l *lister) dataDirs(w io.Writer) {
	e := l.e
	env := e.newEnv()
	var found, missing []string
	for _, a := range e.adapters {
		dd, ok := a.(discover.DataDirer)
		if !ok {
			continue
		}
		dir := dd.DataDir(env)
		at := fmt.Sprintf("%s (%s)", a.Name(), shortHome(dir, e.home))
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			found = append(found, at)
		} else {
			missing = append(missing, at)
		}
	}
	if len(found) > 0 {
		fmt.Fprintf(w, "Searched %s.\n", strings.Join(found, ", "))
	}
	if len(missing) > 0 {
		fmt.Fprintf(w, "No data dir for %s.\n", strings.Join(missing, ", "))
	}
}
