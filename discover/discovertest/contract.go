package discovertest

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/discover"
)

// Case is one adapter over two homes, for CheckContract.
type Case struct {
	Adapter discover.Adapter
	// Empty is an Env over a home where the agent has no sessions; Full one
	// over a home where it has some. Home is Full's directory to prove a read
	// wrote nothing under (for a gateway, whatever local state it reads).
	Empty, Full *discover.Env
	Home        string
}

// statuses are the statuses a session may have (discover's Status* values).
var statuses = []string{discover.StatusRunning, discover.StatusIdle, discover.StatusWaiting,
	discover.StatusStopped, discover.StatusFailed, discover.StatusUnknown}

// Prompt is how long an adapter may take to notice a cancelled context.
const Prompt = 2 * time.Second

// CheckContract holds c.Adapter to discover's adapter contract (adapter.go)
// and returns what it broke, one line each; nil means it kept it:
//   - over an empty home it lists no sessions and no error;
//   - with a cancelled context it returns within Prompt;
//   - Discover and the lookup door write nothing under the home;
//   - over the full home it lists sessions, each with Adapter an agent name
//     this adapter reads, a non-empty ID and a valid status;
//   - discover.Lookup of every id it listed returns that session.
func CheckContract(c Case) []string {
	var bad []string
	badf := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	ctx := context.Background()
	name := c.Adapter.Name()

	if ss, err := c.Adapter.Discover(ctx, c.Empty); err != nil || len(ss) != 0 {
		badf("empty home: %d sessions, error %v; want none and no error", len(ss), err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Adapter.Discover(cancelled, c.Full)
	}()
	select {
	case <-done:
	case <-time.After(Prompt):
		badf("cancelled context: Discover still running after %s", Prompt)
	}

	before, err := tree(c.Home)
	if err != nil {
		return append(bad, err.Error())
	}
	ss, err := c.Adapter.Discover(ctx, c.Full)
	if err != nil {
		badf("full home: Discover: %v", err)
	}
	if len(ss) == 0 {
		badf("full home: no sessions listed (the fixture has some)")
	}
	for _, s := range ss {
		switch {
		case s.ID == "":
			badf("a session without an id: %+v", s)
		case !agents.Known(s.Adapter) || agents.ReaderOf(s.Adapter) != name:
			badf("session %s: adapter %q is not an agent %s reads", s.ID, s.Adapter, name)
		case !slices.Contains(statuses, s.Status):
			badf("session %s: status %q is not one of %v", s.ID, s.Status, statuses)
		}
	}
	for _, s := range ss {
		if s.ID == "" {
			continue
		}
		got, _, err := discover.Lookup(ctx, c.Full, []discover.Adapter{c.Adapter}, 10*time.Second, s.ID, nil)
		if err != nil || got.ID != s.ID || got.Adapter != s.Adapter {
			badf("lookup %s: got %q (%s), error %v", s.ID, got.ID, got.Adapter, err)
		}
	}
	after, err := tree(c.Home)
	if err != nil {
		return append(bad, err.Error())
	}
	for p, v := range after {
		if before[p] != v {
			badf("a read wrote under the home: %s", p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			badf("a read removed %s under the home", p)
		}
	}
	return bad
}
