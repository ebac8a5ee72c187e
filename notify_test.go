package main

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// claudeFleet is a home with n Claude Code TUI sessions whose registry status
// the test sets (docs/agents/claude-code.md §10.2): each is a live stand-in
// process (sleep) with a registry entry naming its pid and start time.
type claudeFleet struct {
	home  string
	procs []proc.Process
	ids   []string
}

func newClaudeFleet(t *testing.T, home string, n int) *claudeFleet {
	t.Helper()
	f := &claudeFleet{home: home}
	for _, d := range []string{".claude/sessions", ".claude/projects"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		cmd := exec.Command("sleep", "600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		p, err := proc.Live().Find(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		f.procs = append(f.procs, p)
		f.ids = append(f.ids, fmt.Sprintf("0000%04x-1111-4222-8333-%012x", i, i))
	}
	return f
}

// set writes session i's registry entry with this status (busy, idle, waiting).
func (f *claudeFleet) set(t *testing.T, i int, status, waitingFor string) {
	t.Helper()
	p := f.procs[i]
	now := time.Now().UnixMilli()
	b, _ := json.Marshal(map[string]any{"pid": p.PID, "sessionId": f.ids[i], "cwd": f.home, "startedAt": now - 60_000,
		"procStart": strconv.FormatUint(p.StartTicks, 10), "kind": "interactive", "entrypoint": "cli",
		"status": status, "waitingFor": waitingFor, "updatedAt": now})
	path := filepath.Join(f.home, ".claude", "sessions", strconv.Itoa(p.PID)+".json")
	if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// firedLines reads the lines --exec appended to path, sorted.
func firedLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	sort.Strings(out)
	return out
}

// notifyHost is testHost with the real clock (marks only move forward in
// time) and PATH, over home.
func notifyHost(t *testing.T, extra map[string]string) (*host, *strings.Builder, *strings.Builder, string) {
	t.Helper()
	h, _, _ := testHost(t)
	home := h.getenv("HOME")
	env := map[string]string{"HOME": home, "AGENTCTL_HOME": h.getenv("AGENTCTL_HOME"), "PATH": os.Getenv("PATH")}
	for k, v := range extra {
		env[k] = v
	}
	var out, errOut strings.Builder
	h.IOStreams = &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	h.getenv = func(k string) string { return env[k] }
	h.now = time.Now
	return h, &out, &errOut, home
}

func TestNotifyFiresOncePerTransition(t *testing.T) {
	h, out, errOut, home := notifyHost(t, nil)
	f := newClaudeFleet(t, home, 2)
	log := filepath.Join(t.TempDir(), "fired")
	o := notifyOptions{notifyRule: notifyRule{On: "waiting,blocked",
		Exec: `echo "$AGENTCTL_SESSION_ID $AGENTCTL_STATUS prev=$AGENTCTL_PREV_STATUS $AGENTCTL_ADAPTER detail=$AGENTCTL_DETAIL cwd=$AGENTCTL_CWD host=$AGENTCTL_HOST" >> ` + log}}
	run := func(when string) {
		t.Helper()
		if err := runNotify(context.Background(), h, o); err != nil {
			t.Fatalf("%s: notify: %v\nstderr: %s", when, err, errOut)
		}
	}
	hostname, _ := os.Hostname()
	a, b := f.ids[0], f.ids[1]
	line := func(id, status, prev, detail string) string {
		return fmt.Sprintf("%s %s prev=%s claude-code detail=%s cwd=%s host=%s", id, status, prev, detail, home, hostname)
	}

	f.set(t, 0, "waiting", "permission: Bash(touch x)")
	f.set(t, 1, "busy", "")
	run("first run")
	want := []string{line(a, "waiting", "", "permission: Bash(touch x)")}
	if diff := cmp.Diff(want, firedLines(t, log)); diff != "" {
		t.Fatalf("first run fires for the session already waiting (-want +got):\n%s\nstdout: %s\nstderr: %s", diff, out, errOut)
	}
	run("again, nothing changed")
	f.set(t, 0, "busy", "")
	run("a answered")
	if diff := cmp.Diff(want, firedLines(t, log)); diff != "" {
		t.Fatalf("no transition into waiting, but fired (-want +got):\n%s", diff)
	}
	f.set(t, 0, "waiting", "permission: Edit(main.go)")
	f.set(t, 1, "waiting", "question")
	run("both wait")
	run("both still wait")
	want = append(want, line(a, "waiting", "running", "permission: Edit(main.go)"), line(b, "waiting", "running", "question"))
	sort.Strings(want)
	if diff := cmp.Diff(want, firedLines(t, log)); diff != "" {
		t.Fatalf("a second prompt fires again, once (-want +got):\n%s", diff)
	}
	if !strings.Contains(out.String(), a+" waiting (was running)") {
		t.Errorf("stdout does not report the firing of %s:\n%s", a, out)
	}
	// Another watcher (another command) has its own marks: its first run fires
	// for both.
	o.Exec += " # second watcher"
	run("second watcher")
	if got := len(firedLines(t, log)); got != 5 {
		t.Errorf("a second watcher fired %d times in all, want 5 (two for its first run)", got)
	}
}

func TestNotifyBadInput(t *testing.T) {
	notify := func(o notifyOptions) func(context.Context, *host) error {
		return func(ctx context.Context, h *host) error { return runNotify(ctx, h, o) }
	}
	runSeam(t, []seamCase{
		{"no --on", notify(notifyOptions{notifyRule: notifyRule{Desktop: true}}), exitUsage, "notify: want --on STATUS"},
		{"unknown status", notify(notifyOptions{notifyRule: notifyRule{On: "waiting,asleep", Desktop: true}}), exitUsage,
			`--on "asleep": want one or more of running, idle, waiting, stopped, failed, unknown, blocked`},
		{"no target", notify(notifyOptions{notifyRule: notifyRule{On: "waiting"}}), exitUsage, "notify: want a target: --exec CMD, --desktop or --webhook URL"},
		{"bad webhook", notify(notifyOptions{notifyRule: notifyRule{On: "waiting", Webhook: "ftp://x"}}), exitUsage, "want an http:// or https:// URL"},
		{"bad interval", notify(notifyOptions{notifyRule: notifyRule{On: "waiting", Desktop: true}, Follow: true, Interval: "soon"}), exitUsage, `--interval "soon"`},
		{"argument", notify(notifyOptions{notifyRule: notifyRule{On: "waiting", Desktop: true}, Args: []string{"x"}}), exitUsage, "notify takes no arguments"},
	})
}

// An unwritable state dir: a clear error, exit 1, nothing fired; once it is
// writable the transition fires, once. (A directory where notify.json's lock
// file should be: not even root can write it.)
func TestNotifyUnwritableStateDir(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	blocker := filepath.Join(state, "notify.json.lock")
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	h, _, _, home := notifyHost(t, map[string]string{"AGENTCTL_HOME": state})
	f := newClaudeFleet(t, home, 1)
	f.set(t, 0, "waiting", "question")
	log := filepath.Join(t.TempDir(), "fired")
	o := notifyOptions{notifyRule: notifyRule{On: "waiting", Exec: "echo $AGENTCTL_SESSION_ID >> " + log}}
	err := runNotify(context.Background(), h, o)
	if codeOf(err) != exitFailed || !strings.Contains(err.Error(), "make "+state+" writable") || !strings.Contains(err.Error(), "nothing was fired") {
		t.Fatalf("unwritable state dir: exit %d, %v; want exit 1 saying to make it writable", codeOf(err), err)
	}
	if got := firedLines(t, log); len(got) != 0 {
		t.Fatalf("fired %v without recording it", got)
	}
	if err := os.RemoveAll(blocker); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := runNotify(context.Background(), h, o); err != nil {
			t.Fatal(err)
		}
	}
	if got := firedLines(t, log); len(got) != 1 {
		t.Errorf("after fixing the state dir: fired %d times, want 1", len(got))
	}
}

func TestNotifyDesktop(t *testing.T) {
	bin := t.TempDir()
	got := filepath.Join(t.TempDir(), "shown")
	script := "#!/bin/sh\nprintf '%s|' \"$@\" >> " + got + "\necho >> " + got + "\n"
	if err := os.WriteFile(filepath.Join(bin, "notify-send"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h, _, errOut, home := notifyHost(t, map[string]string{"PATH": bin + ":/usr/bin:/bin"})
	f := newClaudeFleet(t, home, 1)
	f.set(t, 0, "waiting", "permission: Bash(rm -rf build)")
	o := notifyOptions{notifyRule: notifyRule{On: "waiting", Desktop: true}}
	for i := 0; i < 2; i++ {
		if err := runNotify(context.Background(), h, o); err != nil {
			t.Fatalf("notify --desktop: %v\nstderr: %s", err, errOut)
		}
	}
	want := []string{"--app-name=agentctl|claude-code waiting — ~|permission: Bash(rm -rf build)|"}
	if diff := cmp.Diff(want, firedLines(t, got)); diff != "" {
		t.Errorf("notify-send calls (-want +got):\n%s", diff)
	}

	// Without notify-send (nor osascript): a warning, once per run, naming the
	// fix; nothing was shown, so exit 1 and nothing is marked fired (issue 37
	// item 13): once notify-send is there, the next run shows both.
	empty := t.TempDir()
	path := empty
	h2, out2, errOut2, home2 := notifyHost(t, nil)
	h2env := h2.getenv
	h2.getenv = func(k string) string {
		if k == "PATH" {
			return path
		}
		return h2env(k)
	}
	f2 := newClaudeFleet(t, home2, 2)
	f2.set(t, 0, "waiting", "question")
	f2.set(t, 1, "waiting", "question")
	err := runNotify(context.Background(), h2, o)
	if code := exitCodeOf(err); code != exitFailed {
		t.Fatalf("notify --desktop without notify-send: %v (exit %d); want exit 1", err, code)
	}
	if n := strings.Count(errOut2.String(), "neither notify-send nor osascript is on PATH"); n != 1 {
		t.Errorf("without notify-send: the warning came %d times, want once:\n%s", n, errOut2)
	}
	if out2.Len() != 0 {
		t.Errorf("nothing was shown, but stdout reports firings:\n%s", out2)
	}
	path = bin
	if err := runNotify(context.Background(), h2, o); err != nil {
		t.Fatalf("notify --desktop with notify-send: %v\nstderr: %s", err, errOut2)
	}
	if n := len(firedLines(t, got)); n != 3 {
		t.Errorf("notify-send shown %d notifications in all, want 3 (1 + the 2 left pending)", n)
	}
}

// --skip-existing: the watcher's first run records without firing; later
// transitions fire, also those of sessions its first run did not see (issue 37
// item 13).
func TestNotifySkipExisting(t *testing.T) {
	h, _, errOut, home := notifyHost(t, nil)
	f := newClaudeFleet(t, home, 3)
	log := filepath.Join(t.TempDir(), "fired")
	o := notifyOptions{notifyRule: notifyRule{On: "waiting", Exec: "echo $AGENTCTL_SESSION_ID >> " + log}, SkipExisting: true}
	run := func(when string) {
		t.Helper()
		if err := runNotify(context.Background(), h, o); err != nil {
			t.Fatalf("%s: notify: %v\nstderr: %s", when, err, errOut)
		}
	}
	f.set(t, 0, "waiting", "question")
	run("first run")
	if got := firedLines(t, log); len(got) != 0 {
		t.Fatalf("--skip-existing: the first run fired %v", got)
	}
	f.set(t, 1, "waiting", "question")
	f.set(t, 0, "busy", "")
	run("a new session waits")
	f.set(t, 0, "waiting", "again")
	run("the first one waits again")
	want := []string{f.ids[0], f.ids[1]}
	sort.Strings(want)
	if diff := cmp.Diff(want, firedLines(t, log)); diff != "" {
		t.Errorf("fired (-want +got):\n%s", diff)
	}

	// A first run that sees nothing still counts as the first.
	h2, _, errOut2, home2 := notifyHost(t, nil)
	f2 := newClaudeFleet(t, home2, 1)
	log2 := filepath.Join(t.TempDir(), "fired")
	o2 := notifyOptions{notifyRule: notifyRule{On: "waiting", Exec: "echo $AGENTCTL_SESSION_ID >> " + log2}, SkipExisting: true}
	for i := 0; i < 2; i++ {
		if err := runNotify(context.Background(), h2, o2); err != nil {
			t.Fatalf("notify: %v\nstderr: %s", err, errOut2)
		}
		f2.set(t, 0, "waiting", "question")
	}
	if diff := cmp.Diff([]string{f2.ids[0]}, firedLines(t, log2)); diff != "" {
		t.Errorf("after an empty first run (-want +got):\n%s", diff)
	}
}

// --webhook posts the event signed like session webhooks; a 500 parks it in
// the outbox and sweep delivers it, once.
func TestNotifyWebhookRetriedThroughTheOutbox(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	var fails atomic.Int32
	fails.Store(1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		m := hmac.New(sha256.New, []byte("s3cret"))
		m.Write(b)
		if sig := r.Header.Get("X-Hub-Signature-256"); sig != "sha256="+hex.EncodeToString(m.Sum(nil)) {
			t.Errorf("signature %q does not sign the body", sig)
		}
		if fails.Add(-1) >= 0 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	h, _, errOut, home := notifyHost(t, map[string]string{"AGENTCTL_WEBHOOK_SECRET": "s3cret"})
	f := newClaudeFleet(t, home, 1)
	f.set(t, 0, "busy", "")
	f.set(t, 0, "idle", "")
	f.set(t, 0, "waiting", "question")
	o := notifyOptions{notifyRule: notifyRule{On: "waiting", Webhook: srv.URL}}
	err := runNotify(context.Background(), h, o)
	if codeOf(err) != exitFailed || !strings.Contains(errOut.String(), "queued in outbox.json for `agentctl sweep`") {
		t.Fatalf("a 500: exit %d (%v), stderr %q; want exit 1 and the delivery queued", codeOf(err), err, errOut)
	}
	if err := runNotify(context.Background(), h, o); err != nil {
		t.Fatalf("second run: %v", err)
	}
	// sweep retries due deliveries: a minute later this one is due.
	later := time.Now().Add(2 * time.Minute)
	h.now = func() time.Time { return later }
	for i := 0; i < 2; i++ {
		if err := runSweep(context.Background(), h, sweepOptions{}); err != nil {
			t.Fatalf("sweep: %v\nstderr: %s", err, errOut)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 1 {
		t.Fatalf("delivered %d times, want once: %q", len(bodies), bodies)
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(bodies[0]), &ev); err != nil {
		t.Fatal(err)
	}
	if ev["hook_type"] != "session.waiting" || ev["session_id"] != f.ids[0] || ev["status"] != "waiting" || ev["detail"] != "question" {
		t.Errorf("event body %s: want hook_type session.waiting, the session id, status waiting, detail question", bodies[0])
	}
}

// 16 one-shot runs overlapping all the time, as separate processes (cron lines
// firing together), over a home where 50 sessions change status every round:
// every transition into waiting fires exactly once. A round's statuses are
// written while runs are in flight; the next round starts once a run begun
// after the writes has finished, so every state is seen by some run.
func TestNotifyOverlappingRunsFireOnce(t *testing.T) {
	bin, err := exec.LookPath("agentctl") // the test binary, as TestMain puts it on PATH
	if err != nil {
		t.Skip("agentctl is not on PATH (run through go test)")
	}
	home := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	const sessions, workers = 50, 16
	rounds := 10
	if testing.Short() {
		rounds = 4
	}
	f := newClaudeFleet(t, home, sessions)
	log := filepath.Join(t.TempDir(), "fired")
	waiting := func(i, r int) bool { return (i+r)%3 == 0 || (i%7 == 0 && r%2 == 0) }

	type span struct{ start, end time.Time }
	var mu sync.Mutex
	var runs []span
	var failures []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				cmd := exec.Command(bin, "--home", home, "notify", "--on", "waiting",
					"--exec", `echo "$AGENTCTL_SESSION_ID $AGENTCTL_PREV_STATUS" >> `+log)
				cmd.Env = append(os.Environ(), "AGENTCTL_HOME="+state)
				out, err := cmd.CombinedOutput()
				mu.Lock()
				runs = append(runs, span{start, time.Now()})
				if err != nil {
					failures = append(failures, fmt.Sprintf("%v: %s", err, out))
				}
				mu.Unlock()
			}
		}()
	}
	want := map[string]int{}
	for r := 0; r < rounds; r++ {
		for i := 0; i < sessions; i++ {
			st := "busy"
			if waiting(i, r) {
				st = "waiting"
				if r == 0 || !waiting(i, r-1) {
					want[f.ids[i]]++
				}
			}
			f.set(t, i, st, "")
		}
		written := time.Now()
		deadline := time.Now().Add(60 * time.Second)
		for seen := false; !seen; {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no notify run started after the writes finished within 60 s", r)
			}
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			for _, s := range runs {
				seen = seen || s.start.After(written)
			}
			mu.Unlock()
		}
	}
	close(stop)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d notify runs failed, first: %s", len(failures), failures[0])
	}
	got := map[string]int{}
	for _, l := range firedLines(t, log) {
		id, _, _ := strings.Cut(l, " ")
		got[id]++
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("firings per session over %d rounds and %d runs (-want +got):\n%s", rounds, len(runs), diff)
	}
	t.Logf("%d rounds, %d overlapping runs, %d firings", rounds, len(runs), len(firedLines(t, log)))
}

// list --status waiting,blocked -q / --count: the scriptable "who needs me".
func TestListNeedsMeQuietAndCount(t *testing.T) {
	h, out, _, home := notifyHost(t, nil)
	f := newClaudeFleet(t, home, 3)
	f.set(t, 0, "waiting", "question")
	f.set(t, 1, "busy", "")
	f.set(t, 2, "waiting", "permission: Bash(ls)")
	if err := runList(context.Background(), h, listOptions{Statuses: []string{"waiting,blocked"}, Quiet: true}); err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(out.String())
	sort.Strings(got)
	if diff := cmp.Diff([]string{f.ids[0], f.ids[2]}, got); diff != "" {
		t.Errorf("list --status waiting,blocked -q (-want +got):\n%s", diff)
	}
	out.Reset()
	if err := runList(context.Background(), h, listOptions{Statuses: []string{"waiting", "blocked"}, Count: true}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "2\n" {
		t.Errorf("--count printed %q, want 2", out)
	}
}

// A launch's supervisor applies the config's notify rules to its own session,
// sharing the marks: a cron `notify` with the same rule does not fire the same
// transition again, and the supervisor never marks other sessions gone.
func TestSupervisorNotifyRulesShareTheMarks(t *testing.T) {
	h, _, errOut, home := notifyHost(t, nil)
	f := newClaudeFleet(t, home, 2)
	f.set(t, 0, "waiting", "question")
	f.set(t, 1, "waiting", "question")
	log := filepath.Join(t.TempDir(), "fired")
	cfg := `{"notify": [{"on": "waiting", "exec": "echo $AGENTCTL_SESSION_ID >> ` + log + `"}, {"on": "sleeping", "desktop": true}]}`
	c, warns, err := meta.ParseConfig("config.json", []byte(cfg))
	if err != nil || len(warns) != 0 {
		t.Fatalf("config with notify rules: %v %v", err, warns)
	}
	var logged []string
	ws := notifyWatchers(c.Notify, func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) })
	if len(ws) != 1 || len(logged) != 1 || !strings.Contains(logged[0], `config notify rule 2: --on "sleeping"`) {
		t.Fatalf("rules: %d watchers, logged %q; want the good one, the bad one reported", len(ws), logged)
	}
	e, err := setup(h, globalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	notifyOwn(ctx, e, ws, func() string { return f.ids[0] }, 100*time.Millisecond, func(f string, a ...any) { t.Errorf(f, a...) })
	if got := firedLines(t, log); len(got) != 1 || got[0] != f.ids[0] {
		t.Fatalf("the supervisor's rule fired %q; want its own session once\nstderr: %s", got, errOut)
	}
	// The same rule from cron: only the other session is new to it.
	o := notifyOptions{notifyRule: notifyRule{On: "waiting", Exec: "echo $AGENTCTL_SESSION_ID >> " + log}}
	for i := 0; i < 2; i++ {
		if err := runNotify(context.Background(), h, o); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{f.ids[0], f.ids[1]}, firedLines(t, log)); diff != "" {
		t.Errorf("supervisor then cron with the same rule (-want +got):\n%s", diff)
	}
}

// The supervisor's environment is the agent's, which no longer holds
// AGENTCTL_WEBHOOK_SECRET: its notify rules sign with the secret its launch
// record took at launch.
func TestSupervisorNotifySignsWithTheRecordsSecret(t *testing.T) {
	t.Setenv("AGENTCTL_WEBHOOK_SECRET", "")
	st := meta.NewStore(filepath.Join(t.TempDir(), "state"))
	if err := st.UpdateLaunches(func(l *meta.Launches) (bool, error) {
		l.Records = append(l.Records, meta.Launch{ID: "l-0123456789ab", LaunchedAt: time.Now(), WebhookSecret: "s3cret"})
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	getenv := supervisorGetenv(st.Dir, "l-0123456789ab")
	if got := getenv("AGENTCTL_WEBHOOK_SECRET"); got != "s3cret" {
		t.Errorf("AGENTCTL_WEBHOOK_SECRET = %q, want the record's", got)
	}
	if got := getenv("AGENTCTL_HOME"); got != st.Dir {
		t.Errorf("AGENTCTL_HOME = %q, want %s", got, st.Dir)
	}
	if got := supervisorGetenv(st.Dir, "l-other")("AGENTCTL_WEBHOOK_SECRET"); got != "" {
		t.Errorf("another launch's secret: %q", got)
	}
}

// --follow polls every --interval and fires within one interval of a change;
// Ctrl-C (the context) ends it with exit 0.
func TestNotifyFollow(t *testing.T) {
	h, _, errOut, home := notifyHost(t, nil)
	f := newClaudeFleet(t, home, 1)
	f.set(t, 0, "busy", "")
	log := filepath.Join(t.TempDir(), "fired")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runNotify(ctx, h, notifyOptions{notifyRule: notifyRule{On: "waiting",
			Exec: "echo $AGENTCTL_SESSION_ID >> " + log}, Follow: true, Interval: "200ms"})
	}()
	waitFired := func(n int) time.Duration {
		t.Helper()
		start := time.Now()
		for len(firedLines(t, log)) < n {
			if time.Since(start) > 10*time.Second {
				t.Fatalf("--follow fired %d times in 10 s, want %d\nstderr: %s", len(firedLines(t, log)), n, errOut)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return time.Since(start)
	}
	time.Sleep(500 * time.Millisecond)
	f.set(t, 0, "waiting", "question")
	t.Logf("first prompt fired after %s", waitFired(1))
	f.set(t, 0, "busy", "")
	time.Sleep(600 * time.Millisecond)
	f.set(t, 0, "waiting", "question")
	t.Logf("second prompt fired after %s", waitFired(2))
	time.Sleep(600 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("--follow ended with %v, want nil on Ctrl-C", err)
	}
	if got := len(firedLines(t, log)); got != 2 {
		t.Errorf("--follow fired %d times for two prompts, want 2", got)
	}
}

// exitCodeOf is the exit code run gives err.
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
