package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/meta"
)

// doctor's checks are plain functions over paths, records and injected
// effects (the clock, the process table, running a binary, reading the crontab),
// so tests build a broken state dir and assert on the findings.

// finding is one thing doctor found wrong: what, and what to do about it.
type finding struct {
	Check   string `json:"check"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

// findings collects problems (doctor exits 1), warnings and notes (it does not:
// a note is a fact worth knowing, such as an agent version outside the tested ones).
type findings struct {
	Problems []finding `json:"problems"`
	Warnings []finding `json:"warnings"`
	Notes    []finding `json:"notes"`
}

func (f *findings) problem(check, msg, fix string) {
	f.Problems = append(f.Problems, finding{check, msg, fix})
}

func (f *findings) warning(check, msg, fix string) {
	f.Warnings = append(f.Warnings, finding{check, msg, fix})
}

func (f *findings) note(check, msg, fix string) {
	f.Notes = append(f.Notes, finding{check, msg, fix})
}

// stateFile is one file or directory of the state dir as doctor saw it.
type stateFile struct {
	Name  string `json:"name"`
	Mode  string `json:"mode"`
	Size  int64  `json:"size"`
	OK    bool   `json:"ok"`
	Issue string `json:"issue,omitempty"`
}

// stateReport is the state dir's check.
type stateReport struct {
	Dir    string      `json:"dir"`
	Exists bool        `json:"exists"`
	Mode   string      `json:"mode,omitempty"`
	Files  []stateFile `json:"files"`
}

// jsonStateFiles are the state dir's JSON files (product.md §9), each with its
// "schema" envelope.
var jsonStateFiles = []string{meta.ConfigFile, meta.LaunchesFile, "locks.json", "fuses.json", meta.OutboxFile, meta.ChecksFile, meta.NotifyFile}

// largeStateFile is the size past which a JSON state file is worth a warning:
// records are evicted by TTL, so a file this big means something accumulates.
const largeStateFile = 16 << 20

// checkStateDir checks agentctl's state dir: its mode and owner, every state
// file's (parses, mode 0600, owner), the logs and cache directories, and files
// agentctl moved aside because they did not parse. euid is who should own it all.
func checkStateDir(dir string, euid int, f *findings) stateReport {
	rep := stateReport{Dir: dir, Files: []stateFile{}}
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return rep // nothing written yet: the first command that needs it creates it 0700
	}
	if err != nil {
		f.problem("state", fmt.Sprintf("state dir %s: %v", dir, err), "check its permissions, or point AGENTCTL_HOME elsewhere")
		return rep
	}
	rep.Exists = true
	rep.Mode = fmt.Sprintf("%04o", st.Mode().Perm())
	if !st.IsDir() {
		f.problem("state", fmt.Sprintf("state dir %s is not a directory", dir), "move it away; agentctl creates the directory itself")
		return rep
	}
	permOK(dir, st, 0o700, euid, "state dir "+dir, f)

	for _, name := range jsonStateFiles {
		if sf, ok := checkJSONFile(dir, name, euid, f); ok {
			rep.Files = append(rep.Files, sf)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		f.problem("state", fmt.Sprintf("state dir %s cannot be listed: %v", dir, err), "chmod 700 "+dir)
		return rep
	}
	for _, e := range ents {
		name := e.Name()
		p := filepath.Join(dir, name)
		info, err := os.Lstat(p)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(name, meta.EventsFile):
			if !strings.Contains(name, ".lock") {
				rep.Files = append(rep.Files, checkJournal(p, info, euid, f))
			} else {
				permOK(p, info, 0o600, euid, p, f)
			}
		case strings.Contains(name, ".corrupt-"):
			f.warning("state", fmt.Sprintf("%s (%d bytes) was moved aside by agentctl because it did not parse", p, info.Size()),
				"look at it for anything worth keeping, then delete it")
			rep.Files = append(rep.Files, stateFile{Name: name, Mode: modeString(info), Size: info.Size(), Issue: "corrupt, moved aside"})
		case strings.Contains(name, ".symlink-"):
			f.warning("state", fmt.Sprintf("%s was a symbolic link where a state file belongs; agentctl moved it aside rather than write through it", p),
				"check who planted it (it pointed elsewhere), then delete it")
			rep.Files = append(rep.Files, stateFile{Name: name, Mode: modeString(info), Size: info.Size(), Issue: "symbolic link, moved aside"})
		case strings.Contains(name, ".toolarge-"):
			f.warning("state", fmt.Sprintf("%s (%d bytes) was moved aside by agentctl because it was too large to read safely", p, info.Size()),
				"look at what wrote it, then delete it")
			rep.Files = append(rep.Files, stateFile{Name: name, Mode: modeString(info), Size: info.Size(), Issue: "too large, moved aside"})
		case strings.HasSuffix(name, ".lock"):
			permOK(p, info, 0o600, euid, p, f)
		case strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-"):
			f.warning("state", fmt.Sprintf("%s is a temp file left by an interrupted write", p), "delete it")
		case name == "logs" || name == "cache":
			if info.IsDir() {
				rep.Files = append(rep.Files, checkSubdir(p, info, euid, f))
			}
		}
	}
	return rep
}

// checkJSONFile checks one JSON state file; ok is false when it does not exist.
func checkJSONFile(dir, name string, euid int, f *findings) (stateFile, bool) {
	p := filepath.Join(dir, name)
	info, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return stateFile{}, false
	}
	sf := stateFile{Name: name}
	if err != nil {
		sf.Issue = err.Error()
		f.problem("state", fmt.Sprintf("%s: %v", p, err), "check the state dir's permissions")
		return sf, true
	}
	sf.Mode, sf.Size = modeString(info), info.Size()
	b, err := os.ReadFile(p)
	if name == meta.ConfigFile && err == nil && !configHasSecret(b) {
		// Written by the user's editor, usually 0644: only secrets would make that
		// a leak, so without any it is worth a mention, not a failure.
		sf.OK = checkPerm(p, info, 0o600, euid, p, f, f.warning)
	} else {
		sf.OK = permOK(p, info, 0o600, euid, p, f)
	}
	if err != nil {
		sf.OK, sf.Issue = false, "unreadable"
		f.problem("state", fmt.Sprintf("%s cannot be read: %v", p, err), fmt.Sprintf("chmod 600 %s (and chown it to yourself)", p))
		return sf, true
	}
	if perr := parseStateFile(p, name, b); perr != nil {
		sf.OK, sf.Issue = false, "does not parse"
		fix := fmt.Sprintf("move it aside (mv %s %s.bad); agentctl starts a new one", p, p)
		if name != meta.ConfigFile {
			fix += " — or let the next command that writes it do that (it keeps the old one as " + name + ".corrupt-<time>)"
		}
		f.problem("state", perr.Error(), fix)
		return sf, true
	}
	if info.Size() > largeStateFile {
		f.warning("state", fmt.Sprintf("%s is %d MB; records should be evicted by their TTL", p, info.Size()>>20), "run agentctl sweep, and add it to cron")
	}
	return sf, true
}

// parseStateFile decodes a state file the way its reader does.
func parseStateFile(path, name string, b []byte) error {
	if name == meta.ConfigFile {
		_, _, err := meta.ParseConfig(path, b)
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil // an empty file reads as empty
	}
	var env struct {
		Schema int `json:"schema"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("%s does not parse: %v", path, err)
	}
	if env.Schema > meta.Schema {
		return fmt.Errorf("%s has schema %d, newer than this agentctl understands (%d)", path, env.Schema, meta.Schema)
	}
	return nil
}

// configHasSecret reports whether config.json holds a webhook secret or a
// gateway token (or cannot be told apart, when it does not parse).
func configHasSecret(b []byte) bool {
	c, _, err := meta.ParseConfig("", b)
	if err != nil {
		return true
	}
	if c.WebhookSecret != "" {
		return true
	}
	for _, a := range c.Adapters {
		if a.Token != "" {
			return true
		}
	}
	return false
}

// checkJournal checks one generation of the events journal: mode, owner, and
// lines that do not parse (a crash mid-write leaves at most one; readers skip it).
func checkJournal(p string, info fs.FileInfo, euid int, f *findings) stateFile {
	sf := stateFile{Name: filepath.Base(p), Mode: modeString(info), Size: info.Size()}
	sf.OK = permOK(p, info, 0o600, euid, p, f)
	fh, err := os.Open(p)
	if err != nil {
		sf.OK, sf.Issue = false, "unreadable"
		f.problem("state", fmt.Sprintf("%s cannot be read: %v", p, err), "chmod 600 "+p)
		return sf
	}
	defer fh.Close()
	bad := 0
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 && !json.Valid(sc.Bytes()) {
			bad++
		}
	}
	if bad > 0 {
		sf.Issue = fmt.Sprintf("%d lines do not parse", bad)
		f.warning("state", fmt.Sprintf("%s: %d lines do not parse (events and metrics skip them)", p, bad), "nothing to do unless it grows; it rotates by size")
	}
	return sf
}

// checkSubdir checks logs/ or cache/: the directory's mode, and (logs) every
// log's, since a log holds the agent's output.
func checkSubdir(p string, info fs.FileInfo, euid int, f *findings) stateFile {
	sf := stateFile{Name: filepath.Base(p) + "/", Mode: modeString(info)}
	sf.OK = permOK(p, info, 0o700, euid, p, f)
	open := 0
	_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil || q == p {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if fi.Mode().IsRegular() {
			sf.Size += fi.Size()
			if filepath.Base(p) == "logs" && fi.Mode().Perm()&0o077 != 0 {
				open++
			}
		}
		return nil
	})
	if open > 0 {
		sf.OK = false
		sf.Issue = fmt.Sprintf("%d logs readable by others", open)
		f.problem("state", fmt.Sprintf("%d launch logs in %s are readable by other users", open, p), fmt.Sprintf("chmod 600 %s/*", p))
	}
	return sf
}

// permOK reports a path whose mode lets anyone but its owner in (want is the
// mode agentctl creates it with) or whose owner is not euid.
func permOK(p string, info fs.FileInfo, want fs.FileMode, euid int, what string, f *findings) bool {
	return checkPerm(p, info, want, euid, what, f, f.problem)
}

// checkPerm is permOK with the severity of a too-open mode chosen by the
// caller (report is f.problem or f.warning); a wrong owner is always a problem.
func checkPerm(p string, info fs.FileInfo, want fs.FileMode, euid int, what string, f *findings, report func(check, msg, fix string)) bool {
	ok := true
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		ok = false
		report("state", fmt.Sprintf("%s has mode %04o; agentctl's state must be private (%04o)", what, perm, want),
			fmt.Sprintf("chmod %o %s", want, p))
	}
	if uid, known := ownerUID(info); known && euid >= 0 && uid != euid {
		ok = false
		f.problem("state", fmt.Sprintf("%s is owned by uid %d, not by you (uid %d); agentctl cannot keep it up to date", what, uid, euid),
			meta.ForeignOwnerFix(p, uid, info.IsDir()))
	}
	return ok
}

func ownerUID(info fs.FileInfo) (int, bool) {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), true
	}
	return 0, false
}

func modeString(info fs.FileInfo) string { return fmt.Sprintf("%04o", info.Mode().Perm()) }

// launchReport is the launch records' check.
type launchReport struct {
	Records int `json:"records"`
	// StuckSupervisors are launches whose supervisor is alive while its agent is
	// gone and the launch is not finalised.
	StuckSupervisors []string `json:"stuck_supervisors"`
	// Unfinalised are launches whose agent and supervisor are both gone and
	// that nobody finalised yet (the next reading command or sweep will).
	Unfinalised []string `json:"unfinalised"`
}

// checkLaunches looks for supervisors that outlived their agent, and launches
// waiting to be finalised. alive is the process table's verified-liveness check.
func checkLaunches(recs []meta.Launch, alive func(pid int, start uint64, boot string) bool, f *findings) launchReport {
	rep := launchReport{Records: len(recs), StuckSupervisors: []string{}, Unfinalised: []string{}}
	for _, r := range recs {
		if r.FinalisedAt != nil || r.PID <= 0 || alive(r.PID, r.StartTicks, r.BootID) {
			continue
		}
		if r.SupervisorPID > 0 && alive(r.SupervisorPID, r.SupervisorStart, "") {
			rep.StuckSupervisors = append(rep.StuckSupervisors, r.ID)
			f.warning("launches", fmt.Sprintf("launch %s: its supervisor (PID %d) is alive but its agent (PID %d) is gone", r.ID, r.SupervisorPID, r.PID),
				fmt.Sprintf("if this lasts more than a minute, kill %d; agentctl sweep then finalises the launch", r.SupervisorPID))
			continue
		}
		if r.LauncherPID > 0 && alive(r.LauncherPID, r.LauncherStart, "") {
			continue
		}
		rep.Unfinalised = append(rep.Unfinalised, r.ID)
	}
	if n := len(rep.Unfinalised); n > 0 {
		f.warning("launches", fmt.Sprintf("%d launches ended without being finalised (their on-complete hook and webhook have not run)", n),
			"run agentctl sweep (and add it to cron)")
	}
	return rep
}

// outboxReport is the webhook outbox's check.
type outboxReport struct {
	Pending   int        `json:"pending"`
	Oldest    *time.Time `json:"oldest,omitempty"`
	LastError string     `json:"last_error,omitempty"`
}

func checkOutbox(ds []meta.Delivery, f *findings) outboxReport {
	rep := outboxReport{Pending: len(ds)}
	for i := range ds {
		d := &ds[i]
		if rep.Oldest == nil || d.CreatedAt.Before(*rep.Oldest) {
			t := d.CreatedAt
			rep.Oldest = &t
			rep.LastError = d.LastError
		}
	}
	if rep.Pending > 0 {
		f.warning("outbox", fmt.Sprintf("%d webhook deliveries wait for a retry (oldest from %s: %s)", rep.Pending, rep.Oldest.UTC().Format(time.RFC3339), orDash(rep.LastError)),
			"check the receiver; agentctl sweep retries them, for up to 7 days")
	}
	return rep
}

// cronReport says whether something runs `agentctl sweep` periodically.
type cronReport struct {
	SweepInstalled bool   `json:"sweep_installed"`
	Where          string `json:"where,omitempty"`
	Line           string `json:"line,omitempty"`
}

// sweepCronLine is the line doctor suggests.
const sweepCronLine = "* * * * * agentctl sweep >/dev/null"

// checkCron looks for an active line running `agentctl sweep` (or prune) in the
// user's crontab and in the system cron files. crontab is `crontab -l`'s output.
func checkCron(crontab string, crontabErr error, systemFiles map[string]string, f *findings) cronReport {
	sources := []struct{ where, text string }{}
	if crontabErr == nil {
		sources = append(sources, struct{ where, text string }{"crontab", crontab})
	}
	var names []string
	for n := range systemFiles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		sources = append(sources, struct{ where, text string }{n, systemFiles[n]})
	}
	for _, src := range sources {
		for _, line := range strings.Split(src.text, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if strings.Contains(line, "agentctl") && (strings.Contains(line, " sweep") || strings.Contains(line, " prune")) {
				return cronReport{SweepInstalled: true, Where: src.where, Line: line}
			}
		}
	}
	f.warning("cron", "no cron line runs agentctl sweep: fuses fire, dead launches are finalised and webhooks retried only when some agentctl command runs",
		fmt.Sprintf("add `%s` with crontab -e (use agentctl's full path if cron's PATH lacks it)", sweepCronLine))
	return cronReport{}
}

// systemCronFiles reads /etc/crontab and /etc/cron.d/*; unreadable ones are skipped.
func systemCronFiles() map[string]string {
	out := map[string]string{}
	paths := []string{"/etc/crontab"}
	if m, err := filepath.Glob("/etc/cron.d/*"); err == nil {
		paths = append(paths, m...)
	}
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			out[p] = string(b)
		}
	}
	return out
}

// userCrontab is `crontab -l` (an error when there is no crontab command or none
// installed for the user).
func userCrontab(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "crontab", "-l").Output()
	return string(out), err
}

// slowError is a `--version` that gave no answer within doctor's limit: on a
// busy machine a working agent can take that long (a Node CLI's cold start), so
// it is a warning, never a broken binary.
type slowError struct {
	bin   string
	limit time.Duration
}

func (e *slowError) Error() string {
	return fmt.Sprintf("`%s --version` gave no answer within %s", e.bin, e.limit)
}

// binaryVersion runs `bin --version` (limit at most) and returns its first line.
func binaryVersion(ctx context.Context, bin string, limit time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	first := firstLine(out.String())
	if err != nil {
		if ctx.Err() != nil {
			return "", &slowError{bin, limit}
		}
		msg := firstLine(errb.String())
		if msg == "" {
			msg = first
		}
		if msg != "" {
			return "", fmt.Errorf("`%s --version`: %v: %s", bin, err, msg)
		}
		return "", fmt.Errorf("`%s --version`: %v", bin, err)
	}
	if first == "" {
		first = firstLine(errb.String())
	}
	return first, nil
}

// versionNumber is the first dotted number of a `--version` line: "2.1.332"
// from "2.1.332 (Claude Code)", "0.171.0" from "codex-cli 0.171.0"; "" if none.
var versionNumber = regexp.MustCompile(`\d+(?:\.\d+)+`)

// compareVersions compares dotted numbers field by field (a missing field is 0).
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return cmp.Compare(x, y)
		}
	}
	return 0
}

// testedRange says how an installed version (a `--version` line) relates to the
// versions agentctl was tested with: "older" or "newer", and the number it
// read; "" when it is inside them or either side is unknown.
func testedRange(a agents.Agent, line string) (rel, version string) {
	version = versionNumber.FindString(line)
	if version == "" || a.TestedOldest == "" || a.TestedNewest == "" {
		return "", version
	}
	switch {
	case compareVersions(version, a.TestedOldest) < 0:
		return "older", version
	case compareVersions(version, a.TestedNewest) > 0:
		return "newer", version
	}
	return "", version
}

// testedSpan is "2.1.197 to 2.1.332", or one version when both ends agree.
func testedSpan(a agents.Agent) string {
	if a.TestedOldest == a.TestedNewest {
		return a.TestedOldest
	}
	return a.TestedOldest + " to " + a.TestedNewest
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 100 {
				l = l[:100]
			}
			return l
		}
	}
	return ""
}

// lookPathIn is exec.LookPath over the PATH the command was given (the streams'
// environment, so in-process tests control it).
func lookPathIn(path string) func(string) (string, error) {
	return func(name string) (string, error) {
		if strings.Contains(name, "/") {
			return exec.LookPath(name)
		}
		for _, dir := range filepath.SplitList(path) {
			if dir == "" {
				dir = "."
			}
			p := filepath.Join(dir, name)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
				return p, nil
			}
		}
		return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
	}
}
