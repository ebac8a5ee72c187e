package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/metrics"
	"github.com/agentctl/agentctl/remote"
)

// runRemoteOne runs a one-session command (status, peek, logs, stop, resume)
// or launch on one host: the one its host:id names, or the one whose agentctl
// resolves the bare id (the usual ambiguity rules, across hosts). Its output
// is the remote's as it comes (with the host added to JSON), its exit code the
// remote's.
func runRemoteOne(ctx context.Context, s *host, o remoteOptions) error {
	pos := append([]string{}, o.pos...)
	var target remote.Host
	if o.name == "launch" {
		switch len(o.hosts) {
		case 1:
			target = o.hosts[0]
		case 0:
			return usageErrorf("launch: name the host with --host H")
		default:
			return usageErrorf("launch runs on one host: give exactly one --host (got %d)", len(o.hosts))
		}
	} else {
		if len(pos) == 0 {
			return usageErrorf("%s: want a session ID (host:ID or an id to look for on every host named)", o.name)
		}
		if h, id, ok := o.splitHostID(pos[0]); ok {
			target, pos[0] = h, id
		} else {
			h, full, err := o.resolveAcross(ctx, s, pos[0])
			if err != nil {
				return err
			}
			target, pos[0] = h, full
		}
	}
	args := o.argsFor(target, o.json, pos)
	stdin, args := promptOnStdin(o.name, args, len(pos), s.In)
	return o.runStreaming(ctx, s, target, args, stdin, nil)
}

// runStreaming runs args on h with no bound but the connection's, the output
// streamed (JSON values get the host), and returns the remote exit code.
// prefix, when set, goes before each text line.
func (o remoteOptions) runStreaming(ctx context.Context, s *host, h remote.Host, args []string, stdin io.Reader, mu *sync.Mutex) error {
	if mu == nil {
		mu = &sync.Mutex{}
	}
	var out io.Writer = lockedWriter{s.Out, mu}
	var closeOut func()
	if o.json {
		j := newJSONHostWriter(s.Out, h.Name, mu)
		out, closeOut = j, j.Close
	} else if o.kind == kindWait && len(o.hosts) > 1 {
		p := &prefixWriter{w: s.Out, prefix: h.Name + ":", mu: mu}
		out, closeOut = p, p.Close
	}
	ew := &hostErrWriter{s: s, host: h.Name}
	r := o.runner.Run(ctx, h, remote.Call{Args: args, Stdin: stdin, Stdout: out, Stderr: ew, ConnectTimeout: o.timeout})
	if closeOut != nil {
		closeOut()
	}
	ew.flush()
	if r.Err != nil {
		return &exitError{exitFailed, r.Err}
	}
	if m := o.runner.Mismatch(h.Name, r); m != "" {
		warn(s, m)
	}
	if r.Exit != 0 {
		return &exitError{r.Exit, nil}
	}
	return nil
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// promptOnStdin moves the prompt of launch (-p TEXT) and the message of resume
// (its second argument) out of the remote command line onto ssh's stdin: the
// remote side reads "-". A prompt that was "-" already is this stdin. Other
// commands get no stdin (ssh then reads none of ours).
func promptOnStdin(name string, args []string, npos int, in io.Reader) (io.Reader, []string) {
	args = append([]string{}, args...)
	text := func(v string) io.Reader {
		if v == "-" {
			return in
		}
		return strings.NewReader(v)
	}
	switch name {
	case "launch":
		for i := 0; i < len(args)-npos; i++ {
			n, v, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
			if !strings.HasPrefix(args[i], "-") || (n != "p" && n != "prompt") {
				continue
			}
			if hasValue {
				args[i] = "--prompt=-"
				return text(v), args
			}
			if i+1 < len(args) {
				v := args[i+1]
				args[i+1] = "-"
				return text(v), args
			}
		}
	case "resume":
		if npos >= 2 {
			i := len(args) - npos + 1
			v := args[i]
			args[i] = "-"
			return text(v), args
		}
	}
	return nil, args
}

// resolveArgs are the global flags a lookup on h takes along.
func (o remoteOptions) resolveArgs(h remote.Host, id string) []string {
	args := []string{"status"}
	for i := 0; i < len(o.flags); i++ {
		n, _, hasValue := strings.Cut(strings.TrimLeft(o.flags[i], "-"), "=")
		if !strings.HasPrefix(o.flags[i], "-") {
			continue
		}
		if n == "adapter" || (n == "home" && h.Name == remote.Local) || (n == "timeout" && o.name != "wait") {
			args = append(args, o.flags[i])
			if !hasValue && i+1 < len(o.flags) {
				args = append(args, o.flags[i+1])
				i++
			}
		}
	}
	return append(args, "--json", id)
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
func (o remoteOptions) resolveAcross(ctx context.Context, s *host, id string) (remote.Host, string, error) {
	if err := checkIDArg(id); err != nil {
		return remote.Host{}, "", err
	}
	type answer struct {
		c         *candidate
		ambiguous string
	}
	ans := make([]answer, len(o.hosts))
	var wg sync.WaitGroup
	for i, h := range o.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, errOut bytes.Buffer
			r := o.runner.Run(ctx, h, remote.Call{Args: o.resolveArgs(h, id), Stdout: &out, Stderr: &errOut,
				ConnectTimeout: o.timeout, Timeout: o.hostTimeout()})
			switch {
			case r.Err != nil:
				warn(s, r.Err.Error())
			case r.Exit == exitOK:
				var c candidate
				if err := json.Unmarshal(out.Bytes(), &c); err != nil || c.ID == "" {
					warn(s, fmt.Sprintf("%s: unreadable answer of status --json: %v", h.Name, err))
					return
				}
				c.host = h
				ans[i].c = &c
			case r.Exit == exitAmbiguous:
				ans[i].ambiguous = strings.TrimSpace(errOut.String())
			case r.Exit == exitNotFound:
			default:
				hw := &hostErrWriter{s: s, host: h.Name}
				hw.Write(errOut.Bytes())
				hw.flush()
			}
			if m := o.runner.Mismatch(h.Name, r); m != "" {
				warn(s, m)
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
		return remote.Host{}, "", &exitError{exitNotFound, fmt.Errorf("session not found on %s: %s", hostNames(o.hosts), id)}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ambiguous session id '%s' matches sessions on several hosts; say which with HOST:ID:", id)
	for _, c := range found {
		fmt.Fprintf(&b, "\n  %s:%s %s %s", c.host.Name, c.ID, c.Adapter, c.Cwd)
	}
	for _, a := range amb {
		fmt.Fprintf(&b, "\n  %s", a)
	}
	return remote.Host{}, "", &exitError{exitAmbiguous, errors.New(b.String())}
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

// runRemoteWait waits for sessions on several hosts: one long-lived remote
// `wait` per host with that host's ids. Exit codes as locally: 1 when any
// failed, else 124 when any timed out, else 0; --any returns with the first
// host whose wait returned.
func runRemoteWait(ctx context.Context, s *host, o remoteOptions) error {
	if len(o.pos) == 0 {
		return usageErrorf("wait: want one or more session IDs (host:ID, or ids to look for on every host named)")
	}
	var order []remote.Host
	ids := map[string][]string{}
	for _, a := range o.pos {
		h, id, ok := o.splitHostID(a)
		if !ok {
			var err error
			if h, id, err = o.resolveAcross(ctx, s, a); err != nil {
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
			err := o.runStreaming(ctx, s, h, o.argsFor(h, o.json, ids[h.Name]), nil, &mu)
			codes[i] = exitCodeOf(err)
			if o.anyFlag() && ctx.Err() == nil && (codes[i] == exitOK || codes[i] == exitFailed) {
				cancel()
			}
			if err != nil && codes[i] == exitFailed {
				var ee *exitError
				if errors.As(err, &ee) && ee.err != nil {
					warn(s, ee.err.Error())
				}
			}
		}()
	}
	wg.Wait()
	code := combineWaitCodes(codes, o.anyFlag())
	if code != exitOK {
		return &exitError{code, nil}
	}
	return nil
}

func (o remoteOptions) anyFlag() bool {
	for _, f := range o.flags {
		if f == "--any" || f == "-any" {
			return true
		}
	}
	return false
}

func exitCodeOf(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	}
	return exitFailed
}

// combineWaitCodes is the exit code of a wait over several hosts, from each
// host's: with --any the first that ended a session (0 or 1) wins; else 1 if
// any failed, 124 if any timed out, another code (not found, usage) if any,
// else 0.
func combineWaitCodes(codes []int, anyOf bool) int {
	if anyOf {
		for _, c := range codes {
			if c == exitOK || c == exitFailed {
				return c
			}
		}
	}
	worst := exitOK
	for _, c := range codes {
		switch {
		case c == exitFailed:
			return exitFailed
		case c == exitTimeout:
			worst = exitTimeout
		case c != exitOK && worst == exitOK:
			worst = c
		}
	}
	return worst
}

// runRemoteFollow is events --follow across hosts: one ssh connection per
// host, each NDJSON line printed as it arrives, with its host.
func runRemoteFollow(ctx context.Context, s *host, o remoteOptions) error {
	o.json = true
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed := make([]bool, len(o.hosts))
	for i, h := range o.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := o.runStreaming(ctx, s, h, o.argsFor(h, true, o.pos), nil, &mu)
			var ee *exitError
			if err != nil && ctx.Err() == nil {
				failed[i] = true
				if errors.As(err, &ee) && ee.err != nil {
					warn(s, ee.err.Error())
				}
			}
		}()
	}
	wg.Wait()
	for _, f := range failed {
		if !f {
			return nil
		}
	}
	return &exitError{exitFailed, errors.New("no host could follow its events (see the warnings above)")}
}

// runRemoteDoctorText prints each host's doctor report under its name; exit 1
// when any host is broken or did not answer.
func runRemoteDoctorText(ctx context.Context, s *host, o remoteOptions) error {
	outs, failed := o.gather(ctx, s, false)
	for i, h := range outs {
		if i > 0 {
			fmt.Fprintln(s.Out)
		}
		fmt.Fprintf(s.Out, "== %s ==\n", h.host.Name)
		s.Out.Write(h.out)
		if h.exit != 0 {
			failed = true
		}
	}
	if failed || len(outs) < len(o.hosts) {
		return &exitError{exitFailed, errors.New("some hosts are broken or did not answer (see above)")}
	}
	return nil
}

// printRemoteMetrics merges the hosts' expositions (metrics.Merge).
func printRemoteMetrics(s *host, outs []hostOut) error {
	in := make([]metrics.Exposition, len(outs))
	for i, h := range outs {
		in[i] = metrics.Exposition{Host: h.host.Name, Text: h.out}
	}
	fams, warnings := metrics.Merge(in)
	for _, w := range warnings {
		warn(s, w)
	}
	return fams.Write(s.Out)
}
