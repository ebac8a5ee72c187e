package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/remote"
)

// Several machines (README "Several machines"): with --host H (repeatable) or
// --hosts all (config hosts), a command runs as `ssh -o BatchMode=yes H agentctl
// <the same command> --json` on each host in parallel, and its results are
// merged here with their host. `local` is this machine. A host that cannot
// answer is a warning, like a failed adapter.

// hostFlags are global: accepted before and after the command.
func hostFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "host", Usage: "run on this ssh destination too (repeatable; `local` is this machine; see README \"Several machines\")"},
		&cli.StringFlag{Name: "hosts", Usage: "`all`: run on every host of config hosts"},
	}
}

// remoteKind is how a command runs across hosts.
type remoteKind int

const (
	kindMerge remoteKind = iota // every host, results merged: list, locks, events, metrics, doctor
	kindOne                     // one host, chosen by host:id or by resolving the id on every host
	kindWait                    // one long-lived remote wait per host
)

var remoteKinds = map[string]remoteKind{
	"list": kindMerge, "locks": kindMerge, "events": kindMerge, "metrics": kindMerge, "doctor": kindMerge,
	"status": kindOne, "peek": kindOne, "logs": kindOne, "stop": kindOne, "resume": kindOne, "launch": kindOne,
	"wait": kindWait,
}

// wrapRemote makes the commands of remoteKinds run across hosts when hosts are
// named (or an argument is host:id); without, they run as before.
func wrapRemote(app *cli.App, s *host) {
	for _, c := range app.Commands {
		kind, ok := remoteKinds[c.Name]
		if !ok {
			refuseHosts(c, "")
			continue
		}
		local, name := c.Action, c.Name
		c.Action = func(cc *cli.Context) error {
			o, ok, err := remoteOptionsFrom(cc, s, name, kind)
			if err != nil {
				return err
			}
			if !ok {
				return local(cc)
			}
			return runRemote(cc.Context, s, o)
		}
	}
}

// refuseHosts makes a command that does not run across hosts refuse --host
// rather than ignore it and act on this machine.
func refuseHosts(c *cli.Command, parent string) {
	name := strings.TrimSpace(parent + " " + c.Name)
	for _, sc := range c.Subcommands {
		refuseHosts(sc, name)
	}
	local := c.Action
	if local == nil {
		return
	}
	c.Action = func(cc *cli.Context) error {
		if len(flagStrings(cc, "host")) > 0 || flagString(cc, "hosts") != "" {
			return usageErrorf("%s runs on this machine only; on another, run it there: ssh HOST agentctl %s …", name, name)
		}
		return local(cc)
	}
}

// remoteOptions are what a command across hosts needs from its command line.
type remoteOptions struct {
	name  string
	kind  remoteKind
	hosts []remote.Host // named by --host / --hosts all, in order
	known []remote.Host // hosts a host:id argument may name: those and config hosts
	flags []string      // the command line without the program, host flags and positional arguments
	pos   []string      // positional arguments
	json  bool
	// quiet, count: list -q / --count, applied to the merged sessions here (the
	// remote side answers --json).
	quiet, count bool
	// strict: --strict (list): a host or adapter warning exits 1.
	strict  bool
	follow  bool
	timeout time.Duration // the adapter timeout
	runner  *remote.Runner
}

// remoteOptionsFrom reads the command line; ok is false when the command runs
// locally (no host named, no host:id argument).
func remoteOptionsFrom(c *cli.Context, s *host, name string, kind remoteKind) (remoteOptions, bool, error) {
	o := remoteOptions{name: name, kind: kind, json: c.Bool("json"), strict: c.Bool("strict"), follow: c.Bool("follow")}
	named := flagStrings(c, "host")
	all := flagString(c, "hosts")
	ids := idArgs(name, c.Args().Slice())
	hostArg := slices.ContainsFunc(ids, func(a string) bool { return strings.Contains(a, ":") })
	if len(named) == 0 && all == "" && !hostArg {
		return o, false, nil
	}
	e, err := setup(s, globalsFrom(c))
	if err != nil {
		return o, false, err
	}
	var cfg []remote.Host
	for _, h := range e.config.Hosts {
		cfg = append(cfg, remote.Host{Name: h.Host, Agentctl: h.Agentctl})
	}
	byName := func(n string) remote.Host {
		for _, h := range cfg {
			if h.Name == n {
				return h
			}
		}
		return remote.Host{Name: n}
	}
	add := func(h remote.Host) {
		if !slices.ContainsFunc(o.hosts, func(x remote.Host) bool { return x.Name == h.Name }) {
			o.hosts = append(o.hosts, h)
		}
	}
	switch all {
	case "":
	case "all":
		if len(cfg) == 0 {
			return o, false, usageErrorf("--hosts all: config hosts is empty; add hosts to %s (see README \"Several machines\") or name them with --host", e.store.Path("config.json"))
		}
		for _, h := range cfg {
			add(h)
		}
	default:
		return o, false, usageErrorf("--hosts %q: the only value is all (config hosts); name single hosts with --host", all)
	}
	for _, n := range named {
		for _, n := range strings.Split(n, ",") {
			n = strings.TrimSpace(n)
			if err := remote.CheckHost(n); err != nil {
				return o, false, usageErrorf("--host: %v", err)
			}
			add(byName(n))
		}
	}
	o.known = append(append([]remote.Host{}, o.hosts...), cfg...)
	o.known = append(o.known, remote.Host{Name: remote.Local})
	if len(o.hosts) == 0 {
		// Only host:id arguments: run remotely when one names a known host.
		if !slices.ContainsFunc(ids, func(a string) bool { _, _, ok := o.splitHostID(a); return ok }) {
			return o, false, nil
		}
	}
	if name == "list" && c.Bool("watch") {
		return o, false, usageErrorf("list --watch runs on this machine only; across hosts use: watch -n 2 agentctl list --host …")
	}
	o.timeout = e.timeout
	self, err := s.executable()
	if err != nil {
		return o, false, &exitError{exitFailed, fmt.Errorf("cannot find agentctl's own executable (for the host local): %w", err)}
	}
	o.runner, err = remote.NewRunner(s.getenv("AGENTCTL_SSH"), self, version)
	if err != nil {
		return o, false, usageErrorf("%v", err)
	}
	o.pos = c.Args().Slice()
	o.flags = stripHostFlags(s.argv, len(o.pos))
	if name == "list" {
		o.quiet, o.count = c.Bool("quiet"), c.Bool("count")
		o.flags = slices.DeleteFunc(o.flags, func(a string) bool {
			return a == "-q" || a == "--quiet" || a == "-quiet" || a == "--count" || a == "-count"
		})
	}
	return o, true, nil
}

// idArgs are the arguments of command name that are session ids (and so may
// be host:id): every one of wait's, the first of the one-session commands'.
// resume's message is not one, whatever it holds.
func idArgs(name string, args []string) []string {
	switch {
	case name == "wait":
		return args
	case remoteKinds[name] == kindOne && name != "launch" && len(args) > 0:
		return args[:1]
	}
	return nil
}

// splitHostID splits a host:id argument whose host is one agentctl knows
// (--host, config hosts, local); anything else is an id (OpenClaw's session
// keys contain colons).
func (o remoteOptions) splitHostID(a string) (remote.Host, string, bool) {
	h, id, ok := strings.Cut(a, ":")
	if !ok || id == "" {
		return remote.Host{}, "", false
	}
	for _, k := range o.known {
		if k.Name == h {
			return k, id, true
		}
	}
	return remote.Host{}, "", false
}

// stripHostFlags is argv (reordered: flags first, then the npos positional
// arguments) without the program, the positional arguments and the flags that
// only mean something here (--host, --hosts, --strict, --json: the remote
// side gets --json where it must).
func stripHostFlags(argv []string, npos int) []string {
	if len(argv) == 0 {
		return nil
	}
	end := len(argv) - npos
	if end < 1 {
		end = 1
	}
	if end > 1 && argv[end-1] == "--" {
		end--
	}
	var out []string
	for i := 1; i < end; i++ {
		a := argv[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
			continue
		}
		switch name {
		case "host", "hosts":
			if !hasValue {
				i++
			}
			continue
		case "strict", "json":
			continue
		}
		out = append(out, a)
	}
	return out
}

// argsFor is the command line for host h: the flags (without --home, which
// names a directory here, for a remote host), --json when asked, then the
// positional arguments (ids with their host: taken off by the caller).
func (o remoteOptions) argsFor(h remote.Host, asJSON bool, pos []string) []string {
	var out []string
	for i := 0; i < len(o.flags); i++ {
		a := o.flags[i]
		if h.Name != remote.Local && strings.HasPrefix(a, "-") {
			if n, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "="); n == "home" {
				if !hasValue {
					i++
				}
				continue
			}
		}
		out = append(out, a)
	}
	if asJSON {
		out = append(out, "--json")
	}
	return append(out, pos...)
}

// hostTimeout bounds one call that returns at once (list, status, …): the
// connection gets the adapter timeout and the remote adapters another.
func (o remoteOptions) hostTimeout() time.Duration { return 2 * o.timeout }

func runRemote(ctx context.Context, s *host, o remoteOptions) error {
	switch o.kind {
	case kindWait:
		return runRemoteWait(ctx, s, o)
	case kindOne:
		return runRemoteOne(ctx, s, o)
	}
	if len(o.hosts) == 0 {
		return usageErrorf("%s across hosts: name them with --host H or --hosts all", o.name)
	}
	switch {
	case o.name == "events" && o.follow:
		return runRemoteFollow(ctx, s, o)
	case o.name == "doctor" && !o.json:
		return runRemoteDoctorText(ctx, s, o)
	}
	outs, failed := o.gather(ctx, s, o.name != "metrics" && o.name != "events")
	var err error
	switch o.name {
	case "list":
		err = printRemoteList(s, o, outs, &failed)
	case "locks":
		err = printRemoteLocks(s, o, outs)
	case "events":
		err = printRemoteNDJSON(s, outs)
	case "metrics":
		err = printRemoteMetrics(s, outs)
	case "doctor":
		err = printRemoteArray(s, outs)
	}
	if err != nil {
		return err
	}
	if failed && (o.strict || o.name == "doctor") {
		return &exitError{exitFailed, errors.New("some hosts or adapters failed (see the warnings above)")}
	}
	return nil
}

// hostOut is one host's answer to a call that returns at once.
type hostOut struct {
	host remote.Host
	out  []byte
	exit int
}

// gather runs the command on every named host in parallel, each bounded by
// hostTimeout, and returns the answers of the hosts that answered, in host
// order. failed reports a host that did not answer or that warned.
func (o remoteOptions) gather(ctx context.Context, s *host, asJSON bool) (outs []hostOut, failed bool) {
	res := make([]hostOut, len(o.hosts))
	ok := make([]bool, len(o.hosts))
	warned := make([]bool, len(o.hosts))
	var wg sync.WaitGroup
	for i, h := range o.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			ew := &hostErrWriter{s: s, host: h.Name}
			r := o.runner.Run(ctx, h, remote.Call{Args: o.argsFor(h, asJSON, o.pos), Stdout: &out, Stderr: ew,
				ConnectTimeout: o.timeout, Timeout: o.hostTimeout()})
			ew.flush()
			warned[i] = ew.warned
			if r.Err != nil {
				warn(s, r.Err.Error())
				return
			}
			if m := o.runner.Mismatch(h.Name, r); m != "" {
				warn(s, m)
			}
			res[i], ok[i] = hostOut{host: h, out: out.Bytes(), exit: r.Exit}, true
		}()
	}
	wg.Wait()
	for i := range res {
		if !ok[i] || warned[i] {
			failed = true
		}
		if ok[i] {
			if res[i].exit != 0 && o.name != "doctor" {
				failed = true
			}
			outs = append(outs, res[i])
		}
	}
	return outs, failed
}

// hostErrWriter relays a host's stderr: agentctl's own lines get the host's
// name after "agentctl: " (and "warning: "), so every message says where it
// comes from.
type hostErrWriter struct {
	s      *host
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
	w.s.warnMu.Lock()
	fmt.Fprintln(w.s.ErrOut, termSafeText(l))
	w.s.warnMu.Unlock()
}

// mergeSessions decodes each host's `list --json` and marks every session
// with its host, keeping each host's order, hosts in the order named.
func mergeSessions(outs []hostOut) ([]discover.Session, error) {
	var all []discover.Session
	for _, h := range outs {
		var ss []discover.Session
		if err := json.Unmarshal(h.out, &ss); err != nil {
			return nil, fmt.Errorf("%s: the answer of list --json is not a JSON array of sessions: %v; is agentctl there the same version?", h.host.Name, err)
		}
		for i := range ss {
			ss[i].Host = h.host.Name
		}
		all = append(all, ss...)
	}
	return all, nil
}

func printRemoteList(s *host, o remoteOptions, outs []hostOut, failed *bool) error {
	ss, err := mergeSessions(outs)
	if err != nil {
		warn(s, err.Error())
		*failed = true
	}
	at := func(i int) *discover.Session { return &ss[i] }
	switch {
	case o.count:
		fmt.Fprintln(s.Out, len(ss))
		return nil
	case o.quiet:
		for _, x := range ss {
			fmt.Fprintln(s.Out, x.Host+":"+x.ID)
		}
		return nil
	}
	if o.json {
		return writeSessionsJSON(s.Out, len(ss), at, func(m string) { warn(s, m); *failed = true })
	}
	// No ~ shortening: each cwd is under its own host's home, not this one's.
	e := &cmdEnv{s: s, color: s.IsTTY() && s.getenv("NO_COLOR") == ""}
	e.printSessions(len(ss), at, s.now())
	return nil
}

func printRemoteLocks(s *host, o remoteOptions, outs []hostOut) error {
	if o.json {
		return printRemoteArray(s, outs)
	}
	var t table
	t.add("HOST", "DIRECTORY", "TYPE", "BY", "REASON", "SINCE")
	now := s.now()
	for _, h := range outs {
		var ls []locks.Lock
		if err := json.Unmarshal(h.out, &ls); err != nil {
			warn(s, fmt.Sprintf("%s: the answer of locks --json is not a JSON array: %v", h.host.Name, err))
			continue
		}
		for _, l := range ls {
			t.add(h.host.Name, l.Directory, l.Type, dashIfEmpty(l.LockedBy), dashIfEmpty(l.Reason), age(now.Sub(l.LockedAt)))
		}
	}
	if len(t.rows) == 1 {
		fmt.Fprintln(s.Out, "No active locks.")
		return nil
	}
	t.write(s.Out, nil)
	return nil
}

// printRemoteArray prints every host's JSON values as one array, each object
// (and each object of an array) carrying its host.
func printRemoteArray(s *host, outs []hostOut) error {
	var elems []json.RawMessage
	for _, h := range outs {
		err := eachJSON(h.out, func(v json.RawMessage) {
			if len(v) > 0 && v[0] == '[' {
				var arr []json.RawMessage
				if json.Unmarshal(v, &arr) == nil {
					for _, x := range arr {
						elems = append(elems, withHost(x, h.host.Name))
					}
					return
				}
			}
			elems = append(elems, withHost(v, h.host.Name))
		})
		if err != nil {
			warn(s, fmt.Sprintf("%s: unreadable JSON answer: %v", h.host.Name, err))
		}
	}
	if elems == nil {
		elems = []json.RawMessage{}
	}
	return writeJSON(s.Out, elems)
}

// printRemoteNDJSON prints every host's NDJSON lines, each with its host.
func printRemoteNDJSON(s *host, outs []hostOut) error {
	for _, h := range outs {
		err := eachJSON(h.out, func(v json.RawMessage) {
			s.Out.Write(append(compactJSON(withHost(v, h.host.Name)), '\n'))
		})
		if err != nil {
			warn(s, fmt.Sprintf("%s: unreadable JSON answer: %v", h.host.Name, err))
		}
	}
	return nil
}

// eachJSON calls f for each JSON value of b (one document, or NDJSON).
func eachJSON(b []byte, f func(json.RawMessage)) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var v json.RawMessage
		if err := dec.Decode(&v); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		f(v)
	}
}

// withHost returns the JSON object v with "host" as its first field (v as it
// is when it is not an object or already has a host).
func withHost(v json.RawMessage, h string) json.RawMessage {
	t := bytes.TrimSpace(v)
	if len(t) < 2 || t[0] != '{' {
		return v
	}
	var probe struct {
		Host *string `json:"host"`
	}
	if json.Unmarshal(t, &probe) == nil && probe.Host != nil {
		return v
	}
	name, _ := json.Marshal(h)
	rest := bytes.TrimSpace(t[1:])
	out := append([]byte(`{"host":`), name...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

func compactJSON(v []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}

// jsonHostWriter adds the host to every JSON value streamed through it (NDJSON
// of --follow and wait, or one document), value by value as they complete.
type jsonHostWriter struct {
	w    io.Writer
	host string
	mu   *sync.Mutex
	pr   *io.PipeReader
	pw   *io.PipeWriter
	done chan struct{}
}

func newJSONHostWriter(w io.Writer, host string, mu *sync.Mutex) *jsonHostWriter {
	pr, pw := io.Pipe()
	j := &jsonHostWriter{w: w, host: host, mu: mu, pr: pr, pw: pw, done: make(chan struct{})}
	go func() {
		defer close(j.done)
		dec := json.NewDecoder(bufio.NewReader(pr))
		for {
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				if err != io.EOF {
					// Not JSON after all: pass the rest through as it is.
					j.mu.Lock()
					io.Copy(j.w, io.MultiReader(dec.Buffered(), pr))
					j.mu.Unlock()
				}
				pr.Close()
				return
			}
			out := withHost(v, host)
			if len(v) > 0 && v[0] == '[' {
				var arr []json.RawMessage
				if json.Unmarshal(v, &arr) == nil {
					for i := range arr {
						arr[i] = withHost(arr[i], host)
					}
					var b bytes.Buffer
					writeJSON(&b, arr)
					j.mu.Lock()
					j.w.Write(b.Bytes())
					j.mu.Unlock()
					continue
				}
			}
			// Keep the shape: an indented document stays indented, an NDJSON
			// line stays one line.
			b := append(compactJSON(out), '\n')
			if bytes.ContainsRune(v, '\n') {
				var ind bytes.Buffer
				if json.Indent(&ind, out, "", "  ") == nil {
					b = append(ind.Bytes(), '\n')
				}
			}
			j.mu.Lock()
			j.w.Write(b)
			j.mu.Unlock()
		}
	}()
	return j
}

func (j *jsonHostWriter) Write(p []byte) (int, error) { return j.pw.Write(p) }

// Close flushes what is left and waits for it to be written.
func (j *jsonHostWriter) Close() { j.pw.Close(); <-j.done }

// prefixWriter writes each complete line with a prefix (the text lines of a
// wait across hosts: "host:" before the id).
type prefixWriter struct {
	w      io.Writer
	prefix string
	mu     *sync.Mutex
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		p.mu.Lock()
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i])
		p.mu.Unlock()
		p.buf = p.buf[i+1:]
	}
}

func (p *prefixWriter) Close() {
	if len(p.buf) > 0 {
		p.mu.Lock()
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf)
		p.mu.Unlock()
	}
}
