package main

import (
	"context"
	"fmt"

	"github.com/agentctl/agentctl/discover"
)

// explainedSession is `status --explain --json`: the session object plus
// "explain".
type explainedSession struct {
	discover.Session
	Explain discover.Explanation `json:"explain"`
}

// explainStatus prints the status with every signal behind it and why the
// verdict won (README "How status is decided").
func explainStatus(ctx context.Context, e *cmdEnv, env *discover.Env, sess discover.Session, asJSON bool) error {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	env = env.WithWarn(func(m string) { warn(e.s, sess.Adapter+": "+m) })
	x := discover.Explain(ctx, env, e.adapterFor(sess), sess)
	if asJSON {
		return writeJSON(e.s.Out, explainedSession{sess, x})
	}
	printStatus(e, sess)
	printHuman(e.s.Out, "\nwhy:\n")
	for _, w := range x.Why {
		printHuman(e.s.Out, "  %s\n", w)
	}
	printHuman(e.s.Out, "\nsignals (* = the status rests on it):\n")
	var t table
	for _, g := range x.Signals {
		mark := " "
		if g.Decides {
			mark = "*"
		}
		found := "not found"
		if g.Found {
			found = "found"
		}
		t.add(fmt.Sprintf("  %s %s", mark, g.Source), found, g.Says)
	}
	t.write(e.s.Out, nil)
	return nil
}
