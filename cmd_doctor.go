package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/launch"
	"github.com/agentctl/agentctl/meta"
)

// doctorOptions is everything `doctor` takes from its command line.
type doctorOptions struct {
	json bool
}

// doctorDeps are doctor's effects on the world, injectable for tests.
type doctorDeps struct {
	environ   []string // the environment a launch would see (binary overrides, PATH, HOME)
	lookPath  func(string) (string, error)
	version   func(ctx context.Context, bin string, limit time.Duration) (string, error)
	crontab   func(ctx context.Context) (string, error)
	cronFiles func() map[string]string
	euid      int
}

func defaultDoctorDeps(s *host) doctorDeps {
	return doctorDeps{
		environ:   os.Environ(),
		lookPath:  lookPathIn(s.getenv("PATH")),
		version:   binaryVersion,
		crontab:   userCrontab,
		cronFiles: systemCronFiles,
		euid:      os.Geteuid(),
	}
}

// doctorReport is `doctor --json`.
type doctorReport struct {
	OK       bool            `json:"ok"`
	Adapters []adapterReport `json:"adapters"`
	State    stateReport     `json:"state"`
	Launches launchReport    `json:"launches"`
	Outbox   outboxReport    `json:"outbox"`
	Cron     cronReport      `json:"cron"`
	Prices   pricesReport    `json:"prices"`
	findings
}

// adapterReport is one agent as doctor sees it.
type adapterReport struct {
	Name string `json:"name"`
	// State: ok, not-installed, broken (a problem), failed (discovery failed),
	// no-binary (its files are read, but a launch would not find it).
	State            string         `json:"state"`
	Binary           *binaryReport  `json:"binary,omitempty"` // nil: not started from a local binary (openclaw)
	DataDir          string         `json:"data_dir,omitempty"`
	DataDirExists    bool           `json:"data_dir_exists"`
	Up               bool           `json:"up"`
	DiscoverySeconds float64        `json:"discovery_seconds"`
	Sessions         int            `json:"sessions"`
	Alive            int            `json:"alive"`
	ByStatus         map[string]int `json:"by_status"`
	Warnings         []string       `json:"warnings"`
}

type binaryReport struct {
	Path       string `json:"path,omitempty"`
	Version    string `json:"version,omitempty"`
	Configured bool   `json:"configured"`
	Error      string `json:"error,omitempty"`
	// Slow: `--version` gave no answer within --timeout (a warning, not an error).
	Slow bool `json:"slow,omitempty"`
	// Tested is the span of versions agentctl was tested with ("2.1.197 to
	// 2.1.332"); Untested says "older" or "newer" when Version lies outside it.
	Tested   string `json:"tested,omitempty"`
	Untested string `json:"untested,omitempty"`
}

func doctorCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check agent installs, agentctl's state files and housekeeping; exit 1 if something is broken",
		Description: `For every adapter: the binary a launch would run (path, --version within
--timeout, default 5s; a version outside the ones agentctl was tested with is
noted), the agent's data dir, how long discovery took, its sessions (last 7
days) and warnings. For agentctl itself: the state dir and every state file
(parses, private mode, your ownership, size, files moved aside as corrupt),
supervisors that outlived their agent, launches waiting to be finalised, the
webhook outbox, and whether cron runs "agentctl sweep".

An agent that is simply not installed is listed as such and is fine, and so is
one whose --version is slow to answer (a warning: raise --timeout on a busy
machine). Exit 1 means something is broken — a state file that is corrupt,
unreadable or open to other users, a configured agent binary that is missing or
fails, an agent data dir that cannot be read — and each problem says what to do.

Examples:
  agentctl doctor
  agentctl doctor --adapter claude-code
  agentctl doctor --timeout 30s
  agentctl doctor --json | jq '.problems'`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the report as one JSON object"},
		},
		Action: func(c *cli.Context) error {
			o, err := doctorOptionsFrom(c)
			if err != nil {
				return err
			}
			g := globalsFrom(c)
			g.BadConfigOK = true // reported as a problem, not a reason to stop
			e, err := setup(s, g)
			if err != nil {
				return err
			}
			return runDoctor(c.Context, e, o, defaultDoctorDeps(s))
		},
	}
}

func doctorOptionsFrom(c *cli.Context) (doctorOptions, error) {
	if c.NArg() > 0 {
		return doctorOptions{}, usageErrorf("doctor takes no arguments (got %q); narrow it with --adapter", c.Args().First())
	}
	return doctorOptions{json: c.Bool("json")}, nil
}

func runDoctor(ctx context.Context, e *cmdEnv, o doctorOptions, d doctorDeps) error {
	var rep doctorReport
	f := &rep.findings
	// State files first, and read-only: a reading command's lazy upkeep would
	// move a corrupt file aside before doctor could name it.
	before := len(f.Problems)
	rep.State = checkStateDir(e.store.Dir, d.euid, f)
	switch {
	case e.store.Unusable != nil && len(f.Problems) > before:
		// An unusable state dir (a file, unreadable, not creatable) is said
		// once, by checkStateDir.
	case e.store.Unusable != nil:
		f.problem("state", e.store.Unusable.Error(), "")
	case e.untrusted != nil:
		var ue *meta.UntrustedError
		if errors.As(e.untrusted, &ue) {
			f.problem("trust", fmt.Sprintf("%s %s: agentctl runs nothing from this state dir (fuse scripts, hooks, webhooks, adapter binaries, notify targets) and ignores its config", ue.Path, ue.Reason), ue.Fix)
		} else {
			f.problem("trust", e.untrusted.Error(), "")
		}
	}
	recs, err := e.store.ReadLaunches()
	if err != nil {
		recs = nil // reported by checkStateDir
	}
	rep.Launches = checkLaunches(recs, e.store.IsAlive, f)
	if ds, err := e.store.ReadOutbox(); err == nil {
		rep.Outbox = checkOutbox(ds, f)
	}
	tab, terr := d.crontab(ctx)
	rep.Cron = checkCron(tab, terr, d.cronFiles(), f)
	rep.Adapters = checkAdapters(ctx, e, recs, d, f, &rep.Prices)

	rep.OK = len(rep.Problems) == 0
	if rep.Problems == nil {
		rep.Problems = []finding{}
	}
	if rep.Warnings == nil {
		rep.Warnings = []finding{}
	}
	if rep.Notes == nil {
		rep.Notes = []finding{}
	}
	if o.json {
		if err := writeJSON(e.s.Out, rep); err != nil {
			return err
		}
	} else {
		printDoctor(e, e.s.Out, &rep)
	}
	if !rep.OK {
		p := rep.Problems[0]
		more := ""
		if n := len(rep.Problems); n > 1 {
			more = fmt.Sprintf(" (and %d more, listed above)", n-1)
		}
		msg := p.Message
		if p.Fix != "" {
			msg += "; " + p.Fix
		}
		return &exitError{exitFailed, fmt.Errorf("doctor: %s%s", msg, more)}
	}
	return nil
}

// checkAdapters runs one fan-out (without the lazy finalisation a listing does:
// doctor only looks) and checks each adapter's binary and data dir.
func checkAdapters(ctx context.Context, e *cmdEnv, recs []meta.Launch, d doctorDeps, f *findings, prices *pricesReport) []adapterReport {
	env := e.newEnv()
	env.Launches = recs
	env.Large = discover.LargeListing(env)
	res, ls := discover.List(ctx, env, e.adapters, e.timeout)
	win := discover.Filter{All: true, Since: 7 * 24 * time.Hour, Now: e.s.now()}
	ls.Filter(win)
	*prices = checkPrices(ls, f)

	var names []string
	for _, n := range agents.Names() {
		if e.only == nil || e.only[n] {
			names = append(names, n)
		}
	}
	reps := make([]adapterReport, len(names))
	byName := map[string]*adapterReport{}
	for i, n := range names {
		reps[i] = adapterReport{Name: n, ByStatus: map[string]int{}, Warnings: []string{}}
		byName[n] = &reps[i]
	}
	for i := 0; i < ls.Len(); i++ {
		s := ls.At(i)
		if r := byName[s.Adapter]; r != nil {
			r.Sessions++
			r.ByStatus[s.Status]++
			if discover.Alive(s.Status) {
				r.Alive++
			}
		}
	}
	for _, w := range res.Warnings {
		name, msg, _ := strings.Cut(w, ": ")
		if r := byName[name]; r != nil {
			r.Warnings = append(r.Warnings, msg)
		}
	}

	req := &launch.Request{Kind: launch.KindLaunch, Environ: d.environ, Config: e.config, LookPath: d.lookPath}
	var wg sync.WaitGroup
	for i := range reps {
		r := &reps[i]
		reader := agents.ReaderOf(r.Name) // pi-rust's sessions come from the pi adapter
		r.Up, r.DiscoverySeconds = res.Up[reader], res.Elapsed[reader].Seconds()
		for _, a := range e.adapters {
			if dd, ok := a.(discover.DataDirer); ok && a.Name() == reader {
				r.DataDir = dd.DataDir(env)
			}
		}
		if path, configured, err := launch.FindBinary(r.Name, req); err == nil || configured || path != "" {
			r.Binary = &binaryReport{Path: path, Configured: configured}
			if err != nil {
				r.Binary.Error = err.Error()
			}
		} else if agents.Get(r.Name).BinEnv != "" {
			r.Binary = &binaryReport{Error: err.Error()}
		}
		if r.Binary != nil && r.Binary.Path != "" {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := d.version(ctx, r.Binary.Path, e.timeout)
				r.Binary.Version = v
				var slow *slowError
				switch {
				case errors.As(err, &slow):
					r.Binary.Slow = true
				case err != nil:
					r.Binary.Error = err.Error()
				}
			}()
		}
	}
	wg.Wait()

	for i := range reps {
		judgeAdapter(e, &reps[i], f)
	}
	return reps
}

// judgeAdapter settles an adapter's state and turns what is broken into problems.
func judgeAdapter(e *cmdEnv, r *adapterReport, f *findings) {
	broken := false
	if r.DataDir != "" {
		_, err := os.Stat(r.DataDir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			broken = true
			f.problem(r.Name, fmt.Sprintf("%s data dir %s cannot be read: %v", r.Name, r.DataDir, err), "fix its permissions (or its parent's) so your user can read it")
		default:
			r.DataDirExists = true
			if _, err := os.ReadDir(r.DataDir); err != nil {
				broken = true
				f.problem(r.Name, fmt.Sprintf("%s data dir %s exists but cannot be read: %v", r.Name, r.DataDir, err), fmt.Sprintf("chmod u+rx %s (and chown it to yourself if another user made it)", r.DataDir))
			}
		}
	}
	b := r.Binary
	found := b != nil && b.Path != "" && b.Error == ""
	switch {
	case b != nil && b.Path != "" && b.Error != "":
		broken = true
		f.problem(r.Name, fmt.Sprintf("%s binary %s does not run: %s", r.Name, b.Path, b.Error), fmt.Sprintf("reinstall %s, or point config adapters.%s.binary at a working one", r.Name, r.Name))
	case b != nil && b.Configured && b.Path == "":
		broken = true
		f.problem(r.Name, b.Error, "")
	case b != nil && b.Slow:
		f.warning(r.Name, fmt.Sprintf("%s binary %s is slow to answer: `--version` gave no answer within %s", r.Name, b.Path, e.timeout),
			"nothing is wrong with it unless it never answers; on a busy machine run agentctl doctor --timeout 30s")
	}
	versionNote(r, f)
	// Not installed: nothing to run and nothing to read. pi-rust shares pi's
	// data dir, so only its own sessions count for it; an OpenClaw gateway may
	// be configured without any local state.
	a := agents.Get(r.Name)
	hasData := r.DataDirExists && a.Reader == a.Name
	if a.Gateway && e.config.Adapters[r.Name].URL != "" {
		hasData = true
	}
	notInstalled := !found && !hasData && r.Sessions == 0
	switch {
	case broken:
		r.State = "broken"
	case notInstalled:
		r.State = "not-installed"
	case !r.Up:
		r.State = "failed"
		f.warning(r.Name, fmt.Sprintf("%s discovery failed: %s", r.Name, strings.Join(r.Warnings, "; ")), "its sessions are missing from every listing until this is fixed")
	case b != nil && !found:
		r.State = "no-binary"
	default:
		r.State = "ok"
	}
}

// versionNote records the span of versions agentctl was tested with and notes
// an installed version outside it: not a failure (agents change often and most
// changes are harmless), but the first thing to suspect when a status looks wrong.
func versionNote(r *adapterReport, f *findings) {
	b := r.Binary
	a := agents.Get(r.Name)
	if b == nil || a.TestedNewest == "" {
		return
	}
	b.Tested = testedSpan(a)
	if b.Version == "" || b.Error != "" {
		return
	}
	rel, v := testedRange(a, b.Version)
	if rel == "" {
		return
	}
	b.Untested = rel
	fix := fmt.Sprintf("it most likely works; if a status, listing or launch looks wrong, suspect this first (docs/agents/%s.md says what changed between versions)", a.Doc)
	if rel == "older" {
		fix = "it most likely works; if a status, listing or launch looks wrong, upgrade it first"
	}
	f.note(r.Name, fmt.Sprintf("%s %s is %s than the versions agentctl was tested with (%s)", r.Name, v, rel, b.Tested), fix)
}

func printDoctor(e *cmdEnv, w io.Writer, rep *doctorReport) {
	var t table
	t.add("ADAPTER", "STATE", "BINARY", "VERSION", "DATA DIR", "SESSIONS", "DISCOVERY")
	for _, r := range rep.Adapters {
		bin, ver := "-", "-"
		switch {
		case r.Binary == nil:
			bin = "(gateway)"
		case r.Binary.Slow:
			bin, ver = shortHome(r.Binary.Path, e.home), "(slow)"
		case r.Binary.Path != "":
			bin, ver = shortHome(r.Binary.Path, e.home), orDash(r.Binary.Version)
			if r.Binary.Untested != "" {
				ver += " (" + r.Binary.Untested + ")"
			}
		}
		data := "-"
		if r.DataDirExists {
			data = shortHome(r.DataDir, e.home)
		}
		sessions := fmt.Sprintf("%d", r.Sessions)
		if r.Alive > 0 {
			sessions += fmt.Sprintf(" (%d alive)", r.Alive)
		}
		t.add(r.Name, r.State, bin, ver, data, sessions, fmt.Sprintf("%.2fs", r.DiscoverySeconds))
	}
	t.write(w, nil)

	st := rep.State
	fmt.Fprintln(w)
	switch {
	case !st.Exists:
		printHuman(w, "State dir %s: not created yet\n", st.Dir)
	default:
		printHuman(w, "State dir %s (mode %s)\n", st.Dir, st.Mode)
		var ft table
		for _, sf := range st.Files {
			verdict := "ok"
			if !sf.OK {
				verdict = orDash(sf.Issue)
				if verdict == "-" {
					verdict = "see below"
				}
			} else if sf.Issue != "" {
				verdict = sf.Issue
			}
			ft.add("  "+sf.Name, sf.Mode, byteSize(sf.Size), verdict)
		}
		ft.write(w, nil)
	}
	l := rep.Launches
	printHuman(w, "Launch records: %d (%d waiting to be finalised, %d supervisors outliving their agent)\n", l.Records, len(l.Unfinalised), len(l.StuckSupervisors))
	printHuman(w, "Webhook outbox: %d pending\n", rep.Outbox.Pending)
	if rep.Cron.SweepInstalled {
		printHuman(w, "Cron: sweep runs from %s: %s\n", rep.Cron.Where, rep.Cron.Line)
	} else {
		printHuman(w, "Cron: no sweep line; add `%s` with crontab -e\n", sweepCronLine)
	}

	printPrices(w, rep.Prices)

	printFindings := func(title string, fs []finding) {
		if len(fs) == 0 {
			return
		}
		printHuman(w, "\n%s:\n", title)
		for _, x := range fs {
			printHuman(w, "  - %s\n", x.Message)
			if x.Fix != "" {
				printHuman(w, "    fix: %s\n", x.Fix)
			}
		}
	}
	printFindings("Problems", rep.Problems)
	printFindings("Warnings", rep.Warnings)
	printFindings("Notes", rep.Notes)
	if len(rep.Problems) == 0 {
		fmt.Fprintln(w, "\nNo problems found.")
	}
}

func byteSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}
