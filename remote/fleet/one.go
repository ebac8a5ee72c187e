package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/remote"
)

// runOne runs a one-session command (status, peek, logs, stop, resume)
// or launch on one host: the one its host:id names, or the one whose agentctl
// resolves the bare id (the usual ambiguity rules, across hosts). Its output
// is the remote's as it comes (with the host added to JSON), its exit code the
// remote's.
func runOne(ctx context.Context, st *Streams, o Options) error {
	pos := append([]string{}, o.pos...)
	var target remote.Host
	if o.IDs == NoIDs {
		switch len(o.hosts) {
		case 1:
			target = o.hosts[0]
		case 0:
			return usageErrorf("%s: name the host with --host H", o.name)
		default:
			return usageErrorf("%s runs on one host: give exactly one --host (got %d)", o.name, len(o.hosts))
		}
	} else if o.IDs == FirstName {
		h, name, ok := o.splitHostID(firstOr(pos))
		switch {
		case ok:
			target, pos[0] = h, name
		case len(o.hosts) == 1:
			target = o.hosts[0]
		default:
			return usageErrorf("%s runs on one host: say which with HOST:%s or one --host", o.name, firstOr(pos))
		}
	} else {
		if len(pos) == 0 {
			return usageErrorf("%s: want a session ID (host:ID or an id to look for on every host named)", o.name)
		}
		if h, id, ok := o.splitHostID(pos[0]); ok {
			target, pos[0] = h, id
		} else {
			h, full, err := o.resolveAcross(ctx, st, pos[0])
			if err != nil {
				return err
			}
			target, pos[0] = h, full
		}
	}
	args := o.argsFor(target, o.json, pos)
	stdin, args := onStdin(o.Stdin, args, len(pos), st.In)
	return o.runStreaming(ctx, st, target, args, stdin, nil)
}

func firstOr(pos []string) string {
	if len(pos) == 0 {
		return ""
	}
	return pos[0]
}

// runStreaming runs args on h with no bound but the connection's, the output
// streamed (JSON values get the host), and returns the remote exit code.
// prefix, when set, goes before each text line.
func (o Options) runStreaming(ctx context.Context, st *Streams, h remote.Host, args []string, stdin io.Reader, mu *sync.Mutex) error {
	if mu == nil {
		mu = &sync.Mutex{}
	}
	var out io.Writer
	var closeOut func()
	if o.json {
		j := newJSONHostWriter(st.Out, h.Name, mu, st.text)
		out, closeOut = j, j.Close
	} else {
		// Text: through the caller's sanitiser, then (wait across hosts) the
		// host before each line.
		var next io.Writer = lockedWriter{st.Out, mu}
		closeNext := func() {}
		if o.Mode == PerHost && len(o.hosts) > 1 {
			p := &prefixWriter{w: st.Out, prefix: h.Name + ":", mu: mu}
			next, closeNext = p, p.Close
		}
		tw := &textWriter{w: next, text: st.text}
		out, closeOut = tw, func() { tw.Close(); closeNext() }
	}
	ew := &hostErrWriter{st: st, host: h.Name}
	r := o.Runner.Run(ctx, h, remote.Call{Args: args, Stdin: stdin, Stdout: out, Stderr: ew, ConnectTimeout: o.Timeout})
	closeOut()
	ew.flush()
	if r.Err != nil {
		return &Error{ExitFailed, r.Err}
	}
	if m := o.Runner.Mismatch(h.Name, r); m != "" {
		st.Warn(m)
	}
	if r.Exit != 0 {
		return &Error{r.Exit, nil}
	}
	return nil
}

// candidate is a session one host found for a bare id.
type candidate struct {
	host    remote.Host
	ID      string `json:"id"`
	Adapter string `json:"adapter"`
	Cwd     string `json:"cwd"`
}

// resolveAcross asks every named host's agentctl for id (`status ID --json`,
// in parallel) and applies the resolver's rules across them: an exact id
// anywhere wins, else the prefix must match exactly one session on exactly
// one host.
func (o Options) resolveAcross(ctx context.Context, st *Streams, id string) (remote.Host, string, error) {
	if err := checkIDArg(id); err != nil {
		return remote.Host{}, "", err
	}
	type answer struct {
		c         *candidate
		ambiguous string
	}
	ans := make([]answer, len(o.hosts))
	sem := make(chan struct{}, max(o.parallel, 1))
	var wg sync.WaitGroup
	for i, h := range o.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var out, errOut bytes.Buffer
			r := o.Runner.Run(ctx, h, remote.Call{Args: o.resolveArgs(h, id), Stdout: &out, Stderr: &errOut,
				ConnectTimeout: o.Timeout, Timeout: o.hostTimeout()})
			switch {
			case r.Err != nil:
				st.Warn(r.Err.Error())
			case r.Exit == ExitOK:
				var c candidate
				if err := json.Unmarshal(out.Bytes(), &c); err != nil || c.ID == "" {
					st.Warn(fmt.Sprintf("%s: unreadable answer of status --json: %v", h.Name, err))
					return
				}
				c.host = h
				ans[i].c = &c
			case r.Exit == ExitAmbiguous:
				ans[i].ambiguous = strings.TrimSpace(errOut.String())
			case r.Exit == ExitNotFound:
			default:
				hw := &hostErrWriter{st: st, host: h.Name}
				hw.Write(errOut.Bytes())
				hw.flush()
			}
			if m := o.Runner.Mismatch(h.Name, r); m != "" {
				st.Warn(m)
			}
		}()
	}
	wg.Wait()
	var found, exact []candidate
	var amb []string
	for i, a := range ans {
		if a.c != nil {
			found = append(found, *a.c)
			if a.c.ID == id {
				exact = append(exact, *a.c)
			}
		}
		if a.ambiguous != "" {
			amb = append(amb, o.hosts[i].Name+": "+strings.TrimPrefix(a.ambiguous, "agentctl: "))
		}
	}
	if len(exact) == 1 {
		return exact[0].host, exact[0].ID, nil
	}
	if len(found) == 1 && len(amb) == 0 {
		return found[0].host, found[0].ID, nil
	}
	if len(found) == 0 && len(amb) == 0 {
		return remote.Host{}, "", &Error{ExitNotFound, fmt.Errorf("session not found on %s: %s", hostNames(o.hosts), id)}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ambiguous session id '%s' matches sessions on several hosts; say which with HOST:ID:", id)
	for _, c := range found {
		fmt.Fprintf(&b, "\n  %s:%s %s %s", c.host.Name, c.ID, c.Adapter, c.Cwd)
	}
	for _, a := range amb {
		fmt.Fprintf(&b, "\n  %s", a)
	}
	return remote.Host{}, "", &Error{ExitAmbiguous, errors.New(b.String())}
}

func checkIDArg(id string) error {
	if id == "" || id == "/" || id == "." || id == ".." || strings.ContainsAny(id, "/\x00") {
		return usageErrorf("%q is not a session id", id)
	}
	return nil
}

func hostNames(hs []remote.Host) string {
	var n []string
	for _, h := range hs {
		n = append(n, h.Name)
	}
	return strings.Join(n, ", ")
}

// runWait waits for sessions on several hosts: one long-lived remote
// `wait` per host with that host's ids. Exit codes as locally: 1 when any
// failed, else 124 when any timed out, else 0; --any returns with the first
// host whose wait returned.
func runWait(ctx context.Context, st *Streams, o Options) error {
	if len(o.pos) == 0 {
		return usageErrorf("%s: want one or more session IDs (host:ID, or ids to look for on every host named)", o.name)
	}
	var order []remote.Host
	ids := map[string][]string{}
	for _, a := range o.pos {
		h, id, ok := o.splitHostID(a)
		if !ok {
			var err error
			if h, id, err = o.resolveAcross(ctx, st, a); err != nil {
				return err
			}
		}
		if _, seen := ids[h.Name]; !seen {
			order = append(order, h)
		}
		ids[h.Name] = append(ids[h.Name], id)
	}
	o.hosts = order
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	codes := make([]int, len(order))
	var wg sync.WaitGroup
	for i, h := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := o.runStreaming(ctx, st, h, o.argsFor(h, o.json, ids[h.Name]), nil, &mu)
			codes[i] = exitCodeOf(err)
			if o.anyFlag() && ctx.Err() == nil && (codes[i] == ExitOK || codes[i] == ExitFailed) {
				cancel()
			}
			if err != nil && codes[i] == ExitFailed {
				var ee *Error
				if errors.As(err, &ee) && ee.Err != nil {
					st.Warn(ee.Err.Error())
				}
			}
		}()
	}
	wg.Wait()
	code := combineWaitCodes(codes, o.anyFlag())
	if code != ExitOK {
		return &Error{code, nil}
	}
	return nil
}

func exitCodeOf(err error) int {
	var ee *Error
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	}
	return ExitFailed
}

// combineWaitCodes is the exit code of a wait over several hosts, from each
// host's: with --any the first that ended a session (0 or 1) wins; else 1 if
// any failed, 124 if any timed out, another code (not found, usage) if any,
// else 0.
func combineWaitCodes(codes []int, anyOf bool) int {
	if anyOf {
		for _, c := range codes {
			if c == ExitOK || c == ExitFailed {
				return c
			}
		}
	}
	worst := ExitOK
	for _, c := range codes {
		switch {
		case c == ExitFailed:
			return ExitFailed
		case c == ExitTimeout:
			worst = ExitTimeout
		case c != ExitOK && worst == ExitOK:
			worst = c
		}
	}
	return worst
}
