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
	"time"

	"github.com/agentctl/agentctl/remote"
)

// Answer is one host's answer to a call that returns at once.
type Answer struct {
	Host   remote.Host
	Out    []byte
	Exit   int
	Warned bool // the host's agentctl printed a warning (an adapter failed there)
}

// gather runs the command on every named host, at most --parallel at once,
// each bounded by hostTimeout, and returns the answers of the hosts that
// answered, in host order, and the hosts that did not. failed reports a host
// that did not answer or that warned.
func (o Options) gather(ctx context.Context, st *Streams, asJSON bool) (outs []Answer, missing []Missing, failed bool) {
	return o.call(ctx, st, func(h remote.Host) []string { return o.argsFor(h, asJSON, o.pos) })
}

// Gather runs agentctl args (the same on every host: the caller's own
// command line, not this one's) on every named host as gather does. Warned
// reports, per answer, a host whose agentctl warned (an adapter failed there).
func (o Options) Gather(ctx context.Context, st *Streams, args []string) (outs []Answer, missing []Missing) {
	outs, missing, _ = o.call(ctx, st, func(remote.Host) []string { return args })
	return outs, missing
}

// Hosts are the hosts named, in order.
func (o Options) Hosts() []remote.Host { return o.hosts }

// Short is a host error's cause in a few words: "connection refused" of
// "connection refused: no sshd listening there (ssh: …)".
func Short(cause string) string {
	if i := strings.Index(cause, " ("); i > 0 {
		cause = cause[:i]
	}
	if i := strings.Index(cause, ": "); i > 0 {
		cause = cause[:i]
	}
	return cause
}

func (o Options) call(ctx context.Context, st *Streams, argsOf func(remote.Host) []string) (outs []Answer, missing []Missing, failed bool) {
	res := make([]Answer, len(o.hosts))
	ok := make([]bool, len(o.hosts))
	warned := make([]bool, len(o.hosts))
	miss := make([]string, len(o.hosts))
	n := o.parallel
	if n <= 0 {
		n = DefaultParallel
	}
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, h := range o.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var out bytes.Buffer
			ew := &hostErrWriter{st: st, host: h.Name}
			r := o.Runner.Run(ctx, h, remote.Call{Args: argsOf(h), Stdout: &out, Stderr: ew,
				ConnectTimeout: o.Timeout, Timeout: o.hostTimeout()})
			ew.flush()
			warned[i] = ew.warned
			if r.Err != nil {
				st.Warn(r.Err.Error())
				var he *remote.HostError
				miss[i] = r.Err.Error()
				if errors.As(r.Err, &he) {
					miss[i] = Short(he.Cause)
				}
				return
			}
			if m := o.Runner.Mismatch(h.Name, r); m != "" {
				st.Warn(m)
			}
			res[i], ok[i] = Answer{Host: h, Out: out.Bytes(), Exit: r.Exit, Warned: ew.warned}, true
		}()
	}
	wg.Wait()
	for i := range res {
		if !ok[i] || warned[i] {
			failed = true
		}
		if !ok[i] {
			missing = append(missing, Missing{Host: o.hosts[i].Name, Cause: miss[i]})
		}
		if ok[i] {
			if res[i].Exit != 0 && !o.Verdict {
				failed = true
			}
			outs = append(outs, res[i])
		}
	}
	return outs, missing, failed
}

// runWatch prints the merged answer again every WatchEvery until the
// context ends. Each round shares the hosts' connections (the control
// master), so a round costs no handshake.
func runWatch(ctx context.Context, st *Streams, o Options) error {
	every := o.WatchEvery
	if every <= 0 {
		every = 2 * time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if o.Clear != nil {
			o.Clear(st)
		}
		if err := o.once(ctx, st); err != nil {
			var fe *Error
			if !errors.As(err, &fe) || fe.Code != ExitFailed {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// hostErrWriter relays a host's stderr: agentctl's own lines get the host's
// name after "agentctl: " (and "warning: "), so every message says where it
// comes from.
type hostErrWriter struct {
	st     *Streams
	host   string
	mu     sync.Mutex
	buf    []byte
	warned bool
}

func (w *hostErrWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.line(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

func (w *hostErrWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.line(string(w.buf))
		w.buf = nil
	}
}

func (w *hostErrWriter) line(l string) {
	switch {
	case strings.HasPrefix(l, "agentctl: warning: "):
		w.warned = true
		l = "agentctl: warning: " + w.host + ": " + strings.TrimPrefix(l, "agentctl: warning: ")
	case strings.HasPrefix(l, "agentctl: "):
		l = "agentctl: " + w.host + ": " + strings.TrimPrefix(l, "agentctl: ")
	}
	w.st.Relay(l)
}

// PrintArray prints every host's JSON values as one array, each object (and
// each object of an array) carrying its host.
func PrintArray(st *Streams, outs []Answer) (failed bool, err error) {
	var elems []json.RawMessage
	for _, h := range outs {
		err := eachJSON(h.Out, func(v json.RawMessage) {
			if len(v) > 0 && v[0] == '[' {
				var arr []json.RawMessage
				if json.Unmarshal(v, &arr) == nil {
					for _, x := range arr {
						elems = append(elems, withHost(x, h.Host.Name))
					}
					return
				}
			}
			elems = append(elems, withHost(v, h.Host.Name))
		})
		if err != nil {
			st.Warn(fmt.Sprintf("%s: unreadable JSON answer: %v", h.Host.Name, err))
		}
	}
	if elems == nil {
		elems = []json.RawMessage{}
	}
	return false, writeJSON(st.Out, elems)
}

// PrintNDJSON prints every host's NDJSON lines, each with its host.
func PrintNDJSON(st *Streams, outs []Answer) (failed bool, err error) {
	for _, h := range outs {
		err := eachJSON(h.Out, func(v json.RawMessage) {
			st.Out.Write(append(compactJSON(withHost(v, h.Host.Name)), '\n'))
		})
		if err != nil {
			st.Warn(fmt.Sprintf("%s: unreadable JSON answer: %v", h.Host.Name, err))
		}
	}
	return false, nil
}

// runFollow is events --follow across hosts: one ssh connection per host,
// each NDJSON line printed as it arrives, with its host.
func runFollow(ctx context.Context, st *Streams, o Options) error {
	o.json = true
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed := make([]bool, len(o.hosts))
	for i, h := range o.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := o.runStreaming(ctx, st, h, o.argsFor(h, true, o.pos), nil, &mu)
			var ee *Error
			if err != nil && ctx.Err() == nil {
				failed[i] = true
				if errors.As(err, &ee) && ee.Err != nil {
					st.Warn(ee.Err.Error())
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
	return &Error{ExitFailed, errors.New("no host could follow its events (see the warnings above)")}
}

// runSections prints each host's text answer under its name (doctor without
// --json); exit 1 when any host is broken or did not answer.
func runSections(ctx context.Context, st *Streams, o Options) error {
	outs, _, failed := o.gather(ctx, st, false)
	for i, h := range outs {
		if i > 0 {
			fmt.Fprintln(st.Out)
		}
		fmt.Fprintf(st.Out, "== %s ==\n", st.text(h.Host.Name))
		io.WriteString(st.Out, st.text(string(h.Out)))
		if h.Exit != 0 {
			failed = true
		}
	}
	if failed || len(outs) < len(o.hosts) {
		return &Error{ExitFailed, errors.New("some hosts are broken or did not answer (see above)")}
	}
	return nil
}
