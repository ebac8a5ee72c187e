package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// The status accuracy benchmark (issue 15): a scripted scenario through the stub
// while `agentctl status --json` is sampled every 250 ms. Ground truth comes
// from the stub (a request is held, a reply was sent) and the harness (a
// prompt is on screen, the process exited), never from agentctl's own
// evidence. Each agent reports samples, % correct and the worst latency from a
// transition to the first sample showing it; the target is ≥ 99% and ≤ 1 s
// (enforced with AGENTCTL_ACCURACY_STRICT=1; see check).
// AGENTCTL_ACCURACY_OUT=file appends one Markdown table row per scenario.

const sampleEvery = 250 * time.Millisecond

// truth is the ground-truth timeline of one session: state changes in order.
type truth struct {
	mu      sync.Mutex
	changes []truthChange
}

type truthChange struct {
	at    time.Time
	state string // a status, with "!reason" when blocked
}

func (tr *truth) set(state string) { tr.setAt(time.Now(), state) }

// setAt records a change the harness learnt of after it happened (the stub's
// own time of sending a reply).
func (tr *truth) setAt(at time.Time, state string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.changes = append(tr.changes, truthChange{at, state})
}

// between marks a transition whose exact moment the ground truth cannot pin
// (from the stub sending the reply to the harness seeing the process exit):
// both states are correct until set(to) is called.
func (tr *truth) between(from, to string) { tr.set(from + "|" + to) }

// ok reports whether state is true at t.
func (tr *truth) ok(state string, t time.Time) bool {
	for _, s := range strings.Split(tr.at(t), "|") {
		if s == state {
			return true
		}
	}
	return false
}

func (tr *truth) at(t time.Time) string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s := ""
	for _, c := range tr.changes {
		if !c.at.After(t) {
			s = c.state
		}
	}
	return s
}

func (tr *truth) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var b []string
	for _, c := range tr.changes {
		b = append(b, c.state+"@"+c.at.Format("15:04:05.000"))
	}
	return strings.Join(b, " ")
}

// fileTrace records when a value read from a file changes, polled every 10 ms.
type fileTrace struct {
	changes []string
	quit    chan struct{}
	done    chan struct{}
}

func traceFile(path string, read func([]byte) string) *fileTrace {
	ft := &fileTrace{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(ft.done)
		last := ""
		for {
			b, err := os.ReadFile(path)
			v := "absent"
			if err == nil {
				v = read(b)
			}
			if v != last {
				last = v
				ft.changes = append(ft.changes, v+"@"+time.Now().Format("15:04:05.000"))
			}
			select {
			case <-ft.quit:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return ft
}

func (ft *fileTrace) stop() string {
	close(ft.quit)
	<-ft.done
	return strings.Join(ft.changes, " ")
}

// registryStatus is a Claude registry entry's status (and waitingFor).
func registryStatus(b []byte) string {
	var v struct {
		Status     string `json:"status"`
		WaitingFor string `json:"waitingFor"`
	}
	if json.Unmarshal(b, &v) != nil {
		return "unparsable"
	}
	if v.WaitingFor != "" {
		return v.Status + "(" + v.WaitingFor + ")"
	}
	return v.Status
}

// lastRecord is the type of a transcript's last whole record (user records:
// "user:text" for a prompt, "user:tool_result").
func lastRecord(b []byte) string {
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	var v struct {
		Type    string `json:"type"`
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(b, &v) != nil {
		return "partial"
	}
	if v.Type == "user" {
		if bytes.Contains(v.Message.Content, []byte(`"tool_result"`)) {
			return "user:tool_result"
		}
		return "user:text"
	}
	return v.Type
}

type sample struct {
	start, end time.Time
	state      string
	detail     string // evidence: evidence_detail, shown for wrong samples
}

// sampler runs `agentctl status --json id` every 250 ms until stopped.
type sampler struct {
	samples []sample
	stop    chan struct{}
	done    chan struct{}
}

func startSampler(t *testing.T, a *harness.Agentctl, id string) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			cmd := exec.CommandContext(ctx, a.Bin, "status", "--json", id, "--home", a.Home)
			cmd.Env = a.Env.List()
			out, err := cmd.Output()
			cancel()
			state := "error"
			var v struct {
				Status         string `json:"status"`
				BlockedReason  string `json:"blocked_reason"`
				Evidence       string `json:"evidence"`
				EvidenceDetail string `json:"evidence_detail"`
			}
			if err == nil && json.Unmarshal(out, &v) == nil {
				state = v.Status
				if v.BlockedReason != "" {
					state += "!" + v.BlockedReason
				}
			}
			s.samples = append(s.samples, sample{start, time.Now(), state, v.Evidence + ": " + v.EvidenceDetail})
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// finish stops sampling and scores the samples against tr: a sample is correct
// when it shows the true state at its start or at its end (the snapshot is
// taken in between); a transition's latency is from the change to the end of
// the first sample that shows the new state.
func (s *sampler) finish(t *testing.T, name string, tr *truth) {
	t.Helper()
	close(s.stop)
	<-s.done
	correct := 0
	var wrong []string
	for _, sm := range s.samples {
		if tr.ok(sm.state, sm.start) || tr.ok(sm.state, sm.end) {
			correct++
		} else if len(wrong) < 20 {
			wrong = append(wrong, fmt.Sprintf("%s: %s (%s), true %s", sm.start.Format("15:04:05.000"), sm.state, sm.detail, tr.at(sm.end)))
		}
	}
	pct := 100 * float64(correct) / float64(max(len(s.samples), 1))
	// The states shown, in runs: what agentctl said through the scenario.
	var runs []string
	for i, n := 0, 0; i < len(s.samples); i++ {
		n++
		if i+1 == len(s.samples) || s.samples[i+1].state != s.samples[i].state {
			runs = append(runs, fmt.Sprintf("%s×%d", s.samples[i].state, n))
			n = 0
		}
	}
	var worst time.Duration
	var lat []string
	for i, c := range tr.changes {
		if i == 0 || strings.Contains(c.state, "|") {
			continue
		}
		// Samples are looked at from the start of an either-state window before
		// the change (a sample there showing the new state counts as 0 latency).
		from := c.at
		if prev := tr.changes[i-1]; strings.HasSuffix(prev.state, "|"+c.state) {
			from = prev.at
		}
		end := time.Time{}
		if i+1 < len(tr.changes) {
			end = tr.changes[i+1].at
		}
		seen := time.Duration(-1)
		for _, sm := range s.samples {
			if sm.end.Before(from) || (!end.IsZero() && sm.start.After(end)) {
				continue
			}
			if sm.state == c.state {
				seen = max(sm.end.Sub(c.at), 0)
				break
			}
		}
		if seen < 0 {
			// A phase shorter than a couple of samples can fall between two
			// of them on a loaded machine; outside the strict benchmark it is
			// logged, not counted.
			if os.Getenv("AGENTCTL_ACCURACY_STRICT") == "" && !end.IsZero() && end.Sub(c.at) < 2*time.Second {
				lat = append(lat, fmt.Sprintf("%s (%s long) not seen", c.state, end.Sub(c.at).Round(10*time.Millisecond)))
				continue
			}
			lat = append(lat, c.state+" never seen")
			worst = time.Hour
			continue
		}
		lat = append(lat, fmt.Sprintf("%s %s", c.state, seen.Round(10*time.Millisecond)))
		worst = max(worst, seen)
	}
	worstS := worst.Round(10 * time.Millisecond).String()
	if worst == time.Hour {
		worstS = "never"
	}
	t.Logf("accuracy %s: %d samples, %.1f%% correct, worst latency %s; transitions: %s; shown: %s", name, len(s.samples), pct, worstS, strings.Join(lat, ", "), strings.Join(runs, " "))
	if len(wrong) > 0 {
		t.Logf("accuracy %s: wrong samples (start: shown, true at the end): %s", name, strings.Join(wrong, "; "))
	}
	if out := os.Getenv("AGENTCTL_ACCURACY_OUT"); out != "" {
		if f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintf(f, "| %s | %d | %.1f%% | %s | %s |\n", name, len(s.samples), pct, worstS, strings.Join(lat, ", "))
			f.Close()
		}
	}
	// The targets (≥ 99%, ≤ 1 s) are the benchmark's, checked with
	// AGENTCTL_ACCURACY_STRICT=1 on an otherwise idle machine (README "Status
	// accuracy"). In the whole suite, where other test packages share the 2
	// cores and a sample or a node start can take seconds, the floor is what
	// no load excuses: a state never or mostly not reported.
	minPct, maxLat := 85.0, 5*time.Second
	if os.Getenv("AGENTCTL_ACCURACY_STRICT") != "" {
		minPct, maxLat = 99, time.Second
	}
	if pct < minPct {
		t.Errorf("accuracy %s: %.1f%% of %d samples correct, want ≥ %.0f%%; wrong: %s", name, pct, len(s.samples), minPct, strings.Join(wrong, "; "))
	}
	if worst > maxLat {
		t.Errorf("accuracy %s: worst transition latency %s, want ≤ %s", name, worstS, maxLat)
	}
}

// Codex exec (print mode): a held reply (running), the reply (the run ends:
// stopped), and a second run whose replies are all 429 (failed, blocked on
// quota). Codex exec cannot ask for approval (its policy is never): waiting
// is not a state it has.
func TestStatusAccuracyCodexExec(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewCodex(t, srv)
	dir := harness.WorkDir(t, "acc")
	a := harness.NewAgentctl(t, c.Home)

	p := c.Exec(t, dir, "accuracy HOLD=acc")
	id := p.WaitStdout(t, 60*time.Second, "thread.started", harness.CodexThreadID)
	waitHeld(t, srv, "acc")
	waitRollout(t, c, "accuracy HOLD=acc")
	var tr truth
	tr.set("running")
	s := startSampler(t, a, id)
	time.Sleep(5 * time.Second)
	tr.between("running|idle", "stopped")
	srv.Release("acc")
	if code := p.Wait(t, 60*time.Second); code != 0 {
		t.Fatalf("codex exec exited %d", code)
	}
	tr.set("stopped")
	time.Sleep(3 * time.Second)
	s.finish(t, "Codex exec: prompt, held reply, reply, exit", &tr)

	q := c.Exec(t, dir, "accuracy quota STATUS=429")
	qid := q.WaitStdout(t, 60*time.Second, "thread.started", harness.CodexThreadID)
	harness.Eventually(t, 30*time.Second, func() string {
		if _, _, code := a.Run(t, "status", qid); code != 0 {
			return "the second run's rollout is not found yet"
		}
		return ""
	})
	var qt truth
	qt.set("running")
	qs := startSampler(t, a, qid)
	// Codex retries the 429s (running); when it gives up, the error record
	// comes just before the exit. Between the last 429 and the exit the exec
	// may be alive with its turn over: idle and blocked is true too. The last
	// 429 is known once Codex exited: the truth is written then.
	q.Wait(t, 180*time.Second)
	exited := time.Now()
	es := srv.ModelExchanges(func(e stub.Exchange) bool { return e.Status == 429 && e.Completed })
	if len(es) == 0 {
		t.Fatal("codex exited without a 429 sent")
	}
	qt.setAt(es[len(es)-1].Done, "running|idle!quota|failed!quota")
	qt.setAt(exited, "failed!quota")
	t.Logf("codex exec: %d HTTP 429 replies; it exited %s after the first, %s after the last", len(es),
		exited.Sub(es[0].Done).Round(100*time.Millisecond), exited.Sub(es[len(es)-1].Done).Round(100*time.Millisecond))
	time.Sleep(3 * time.Second)
	qs.finish(t, "Codex exec: 429 until it gives up", &qt)
}

// The Claude Code TUI on a pty: idle before a prompt, running while the stub
// holds the reply, idle after it, running while the stub holds a reply asking
// for a tool, waiting at its permission prompt, idle after rejecting it,
// running while the provider answers 429 and Claude retries, idle and blocked
// on quota once it gives up, failed and blocked after /exit.
func TestStatusAccuracyClaudeTUI(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	// After the rejection Claude sends the tool result and the next prompt
	// in one user message: the quota prompt is found in the body.
	srv := stub.Start(t, func(r *stub.Request) stub.Reply {
		if strings.Contains(string(r.Body), "accuracy quota STATUS=429") {
			return stub.Reply{Status: 429}
		}
		return stub.Keywords(r)
	})
	c := harness.NewClaude(t, harness.ClaudeNewest, srv)
	c.Env = c.Env.With("CLAUDE_CODE_MAX_RETRIES", "1")
	dir := harness.WorkDir(t, "acc")
	seedClaudeJSON(t, c, dir)
	id := uuid.NewString()
	p := harness.StartPTY(t, harness.Spec{Path: c.Bin, Args: []string{"--session-id", id, "--permission-mode", "default"},
		Dir: dir, Env: c.Env, Name: "claude-tui-acc"})
	a := harness.NewAgentctl(t, c.Home)
	harness.Eventually(t, 30*time.Second, func() string {
		if !exists(c.Registry(p.PID)) {
			return "no registry file yet"
		}
		return ""
	})
	time.Sleep(2 * time.Second) // the TUI takes keys a moment after it registers
	var tr truth
	tr.set("idle")
	s := startSampler(t, a, id)
	// Claude's registry status, traced every 10 ms: a miss is agentctl's when
	// the registry said the true state before the sample, else the agent's
	// own record lagged what the harness saw.
	reg := traceFile(c.Registry(p.PID), registryStatus)
	tx := traceFile(c.Transcript(dir, id), lastRecord)
	hist := traceFile(filepath.Join(c.Home, ".claude", "history.jsonl"), func(b []byte) string { return fmt.Sprint(bytes.Count(b, []byte("\n")), " lines") })
	defer func() {
		t.Logf("registry status changes: %s; transcript's last record: %s; history.jsonl: %s; ground truth: %s", reg.stop(), tx.stop(), hist.stop(), tr.String())
	}()
	time.Sleep(3 * time.Second)

	// From Enter to the stub holding the request Claude has started its turn
	// at a moment the harness cannot see (traced: the registry's busy came
	// 0.1 s before the stub held the request): both states count there, as
	// for every other prompt of the benchmark.
	keep := os.Getenv("AGENTCTL_ACCURACY_KEEP")
	var idleEntry []byte
	if keep != "" {
		idleEntry, _ = os.ReadFile(c.Registry(p.PID))
	}
	const prompt = "accuracy HOLD=tacc"
	typeLineThen(t, p, prompt, func() { tr.between("idle", "running") })
	waitHeld(t, srv, "tacc")
	tr.set("running")
	if keep != "" {
		// The registry entry before Enter and history.jsonl once the stub
		// holds the request: the moment where, under load, the entry still
		// says idle (traced above).
		hist, _ := os.ReadFile(filepath.Join(c.Home, ".claude", "history.jsonl"))
		out := filepath.Join(keep, "claude-tui-first-prompt", ".claude")
		if err := os.MkdirAll(filepath.Join(out, "sessions"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(out, "sessions", filepath.Base(c.Registry(p.PID))), idleEntry, 0o644)
		os.WriteFile(filepath.Join(out, "history.jsonl"), hist, 0o644)
	}
	time.Sleep(3 * time.Second)
	from := p.Len()
	srv.Release("tacc")
	p.WaitOutput(t, 30*time.Second, from, "FAKE-REPLY")
	tr.set("idle")
	time.Sleep(3 * time.Second)

	from = p.Len()
	typeLineThen(t, p, "HOLD=tacc2 TOOLCMD: touch acc-made-this", func() { tr.between("idle", "running") })
	waitHeld(t, srv, "tacc2")
	tr.set("running")
	time.Sleep(3 * time.Second)
	srv.Release("tacc2")
	// Claude asks once it has read the tool call: the moment lies between the
	// stub sending the call and the prompt on screen; both states count there.
	tr.setAt(toolSent(t, srv), "running|waiting")
	p.WaitOutput(t, 30*time.Second, from, harness.ClaudePermissionPrompt)
	tr.set("waiting")
	time.Sleep(3 * time.Second)
	from = p.Len()
	p.Type(t, "\x1b") // reject: the turn ends
	// Likewise from the key to the screen showing the rejection.
	tr.between("waiting", "idle")
	p.WaitOutput(t, 10*time.Second, from, "Interrupted")
	tr.set("idle")
	time.Sleep(3 * time.Second)

	// Out of quota: every reply is 429; Claude retries once
	// (CLAUDE_CODE_MAX_RETRIES=1), then records "API Error: 429 …" and ends
	// the turn.
	tr.between("idle", "running")
	typeLine(t, p, "accuracy quota STATUS=429")
	harness.Eventually(t, 60*time.Second, func() string {
		if len(srv.ModelExchanges(func(e stub.Exchange) bool { return e.Status == 429 })) == 0 {
			return "no 429 sent yet; screen:\n" + harness.Tail(harness.StripANSI(p.Output()), 15)
		}
		return ""
	})
	tr.set("running")
	var sent time.Time
	harness.Eventually(t, 60*time.Second, func() string {
		es := srv.ModelExchanges(func(e stub.Exchange) bool { return e.Status == 429 && e.Completed })
		if len(es) < 2 {
			return "claude did not retry the 429"
		}
		sent = es[1].Done
		return ""
	})
	tr.setAt(sent, "running|idle!quota")
	time.Sleep(time.Until(sent.Add(2 * time.Second)))
	tr.set("idle!quota")
	time.Sleep(3 * time.Second)
	if out := os.Getenv("AGENTCTL_ACCURACY_KEEP"); out != "" {
		b, _ := os.ReadFile(c.Transcript(dir, id))
		_ = os.WriteFile(filepath.Join(out, "claude-tui-quota.jsonl"), b, 0o644)
	}

	// Claude removes its registry entry just before it exits: from /exit to
	// the harness seeing the exit, both states count. The session's last turn
	// is the error: failed, blocked.
	tr.between("idle!quota", "failed!quota")
	typeLine(t, p, "/exit")
	p.Wait(t, 30*time.Second)
	tr.set("failed!quota")
	time.Sleep(3 * time.Second)
	s.finish(t, "Claude Code "+c.Version+" TUI: idle, held reply, reply, held tool call, permission prompt, reject, 429 (one retry), /exit", &tr)
}

// typeLineThen is typeLine calling before just before it presses Enter.
func typeLineThen(t *testing.T, p *harness.PTY, text string, before func()) {
	t.Helper()
	from := p.Len()
	p.Type(t, text)
	p.WaitOutput(t, 10*time.Second, from, text)
	before()
	p.Type(t, "\r")
}

// heldPrint scores one print-mode run whose reply the stub holds as hold: running
// while held, stopped after the exit (either while the reply streams and the
// process exits).
func heldPrint(t *testing.T, name string, a *harness.Agentctl, srv *stub.Server, id, hold string, p *harness.Proc) {
	t.Helper()
	var tr truth
	tr.set("running")
	s := startSampler(t, a, id)
	time.Sleep(5 * time.Second)
	tr.between("running|idle", "stopped")
	srv.Release(hold)
	waitExit(t, name, p)
	tr.set("stopped")
	time.Sleep(3 * time.Second)
	s.finish(t, name, &tr)
}

// Claude Code print mode (-p): running while the reply is held, stopped after.
// Plain -p cannot ask (what would prompt is denied); with prompts routed to the
// SDK host it waits (claude_printperm_test.go).
func TestStatusAccuracyClaudePrint(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewClaude(t, harness.ClaudeNewest, srv)
	dir := harness.WorkDir(t, "acc")
	a := harness.NewAgentctl(t, c.Home)
	id := uuid.NewString()
	p := c.Print(t, dir, "accuracy HOLD=cp", "--session-id", id)
	waitHeldFor(t, srv, "cp", 180*time.Second)
	waitFile(t, c.Transcript(dir, id))
	heldPrint(t, "Claude Code "+c.Version+" -p: held reply, reply, exit", a, srv, id, "cp", p)
}

// Claude Code print mode driven as an SDK host drives it (stream-json in and
// out, permission prompts routed to the host with --permission-prompt-tool
// stdio): running while the reply is held, waiting while the host has not
// answered the can_use_tool control request, running once it allowed the call
// and while the reply to its output is held, idle once the turn's result is
// out (the process waits for the next message on stdin), stopped once stdin is
// closed and it exited.
func TestStatusAccuracyClaudePrintPermission(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, func(r *stub.Request) stub.Reply {
		rep := stub.Keywords(r)
		if r.ToolResult {
			rep.Hold = "cpp2"
		}
		return rep
	})
	c := harness.NewClaude(t, harness.ClaudeNewest, srv)
	dir := harness.WorkDir(t, "acc")
	a := harness.NewAgentctl(t, c.Home)
	id := uuid.NewString()
	cmd, stdin, lines := startClaudeSDK(t, c, dir, id)
	sdkUser(stdin, "accuracy HOLD=cpp TOOLCMD: touch acc-made-this")
	waitHeldFor(t, srv, "cpp", 180*time.Second)
	waitFile(t, c.Transcript(dir, id))
	var tr truth
	tr.set("running")
	s := startSampler(t, a, id)
	time.Sleep(3 * time.Second)
	srv.Release("cpp")
	// Claude asks once it has read the tool call: the moment lies between the
	// stub sending the call and the control request on stdout.
	tr.setAt(toolSent(t, srv), "running|waiting")
	var req controlRequest
	json.Unmarshal([]byte(waitSDKLine(t, lines, `"control_request"`, 60*time.Second)), &req)
	tr.set("waiting")
	time.Sleep(3 * time.Second)
	sdkAllow(stdin, req.RequestID, req.Request.Input)
	tr.set("running") // the call runs, then its output goes to the stub
	waitHeldFor(t, srv, "cpp2", 60*time.Second)
	time.Sleep(3 * time.Second)
	srv.Release("cpp2")
	// The turn ends between the stub sending the last reply and the result
	// line on stdout.
	var sent time.Time
	harness.Eventually(t, 60*time.Second, func() string {
		es := srv.ModelExchanges(func(e stub.Exchange) bool { return e.Request.ToolResult && e.Completed })
		if len(es) == 0 {
			return "the reply to the allowed call was not sent"
		}
		sent = es[0].Done
		return ""
	})
	tr.setAt(sent, "running|idle")
	waitSDKLine(t, lines, `"type":"result"`, 60*time.Second)
	tr.set("idle")
	time.Sleep(3 * time.Second)
	// The host is done: it closes stdin and Claude exits.
	tr.between("idle", "stopped")
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("claude -p exited with %v after stdin closed", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("claude -p did not exit within 60 s of stdin closing")
	}
	tr.set("stopped")
	time.Sleep(3 * time.Second)
	s.finish(t, "Claude Code "+c.Version+" -p, permission prompts to the SDK host: held reply, can_use_tool request, allow, held reply, reply, stdin closed", &tr)
}

// OpenCode run: running while the reply is held, stopped after; a 401 ends the
// run failed and blocked on auth. `opencode run` cannot wait (it rejects an
// "ask" permission by itself).
func TestStatusAccuracyOpenCodeRun(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	oc := harness.NewOpenCode(t, srv)
	dir := harness.WorkDir(t, "acc")
	a := harness.NewAgentctl(t, oc.Home)
	p := oc.Run(t, dir, "accuracy HOLD=ocacc")
	waitHeldFor(t, srv, "ocacc", 400*time.Second)
	id := openCodeSessionIn(t, oc, dir)
	heldPrint(t, "OpenCode run: held reply, reply, exit", a, srv, id, "ocacc", p)
}

// Pi print mode: running while the reply is held, stopped after. Pi has no
// permission prompts.
func TestStatusAccuracyPiPrint(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, func(r *stub.Request) stub.Reply {
		rep := stub.Keywords(r)
		if r.ToolResult && strings.Contains(string(r.Body), "PAUSE-AFTER-TOOL") {
			rep.Hold = "piacc"
		}
		return rep
	})
	pi := harness.NewPi(t, srv)
	dir := harness.WorkDir(t, "acc")
	a := harness.NewAgentctl(t, pi.Home)
	// Pi writes nothing before its first reply: hold the reply after a tool.
	p := pi.Print(t, dir, "accuracy PAUSE-AFTER-TOOL TOOLCMD: echo acc")
	id := p.WaitStdout(t, 180*time.Second, "session header", harness.PiSessionID)
	waitHeldFor(t, srv, "piacc", 180*time.Second)
	harness.Eventually(t, 10*time.Second, func() string {
		if len(pi.Sessions()) != 1 {
			return "no session file yet"
		}
		return ""
	})
	heldPrint(t, "Pi -p: held reply after a tool, reply, exit", a, srv, id, "piacc", p)
}

// The Codex TUI on a pty (approval policy on-request): running while the reply
// is held, waiting while it asks to approve an escalated command, running while
// the approved command runs (3 s) and while the reply to its output is held,
// idle once that reply was sent; running while a held reply turns into 429,
// idle and blocked on quota once Codex gave up; running while the next reply
// is held, idle after it; still idle after /quit (the app-server daemon the
// TUI leaves behind holds the thread), stopped once `codex app-server daemon
// stop` returned.
func TestStatusAccuracyCodexTUI(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, func(r *stub.Request) stub.Reply {
		rep := stub.Keywords(r)
		if r.ToolResult {
			rep.Hold = "cxacc2"
		}
		return rep
	})
	c := harness.NewCodex(t, srv)
	dir := harness.WorkDir(t, "acc")
	p := startCodexTUI(t, c, dir, "codex-tui-acc", 90*time.Second)
	a := harness.NewAgentctl(t, c.Home)
	const prompt = "ESCALATE HOLD=cxacc TOOLCMD: sleep 3; touch acc-made-this"
	codexTUIPrompt(t, p, srv, prompt, "cxacc")
	waitRollout(t, c, prompt)
	id := strings.TrimSuffix(filepath.Base(c.Rollouts()[0]), ".jsonl")
	id = id[len(id)-36:]
	var tr truth
	tr.set("running")
	s := startSampler(t, a, id)
	time.Sleep(4 * time.Second)
	from := p.Len()
	srv.Release("cxacc")
	// Codex asks once it has read the tool call: the moment lies between the
	// stub sending the call and the prompt on screen; both states count there.
	tr.setAt(toolSent(t, srv), "running|waiting")
	p.WaitOutput(t, 30*time.Second, from, "Would you like to run")
	tr.set("waiting")
	time.Sleep(4 * time.Second)
	from = p.Len()
	p.Type(t, "y")
	tr.set("running") // the approved command runs for 3 s, then its output goes to the stub
	p.WaitOutput(t, 10*time.Second, from, "You approved")
	waitHeldFor(t, srv, "cxacc2", 60*time.Second)
	time.Sleep(3 * time.Second)
	srv.Release("cxacc2")
	// The TUI ends its turn once the final reply was sent, a moment the ground
	// truth cannot see: both states count for 2 s after the reply was sent.
	var sent time.Time
	harness.Eventually(t, 120*time.Second, func() string {
		es := srv.ModelExchanges(func(e stub.Exchange) bool { return e.Request.ToolResult && e.Completed })
		if len(es) == 0 {
			return "the reply to the approved call was not sent"
		}
		sent = es[0].Done
		return ""
	})
	tr.setAt(sent, "running|idle")
	time.Sleep(time.Until(sent.Add(2 * time.Second)))
	tr.set("idle")
	time.Sleep(4 * time.Second)

	// Out of quota: the reply is held, then every reply of the turn is 429.
	// Codex gives up (0.169 with the stub: after the first) and ends the turn
	// with task_complete carrying the error: idle and blocked while the TUI
	// is up. From the keys to the stub holding the request the turn has
	// started at a moment the harness cannot see.
	tr.between("idle", "running")
	codexTUIPrompt(t, p, srv, "accuracy quota HOLD=cxq STATUS=429", "cxq")
	tr.set("running")
	time.Sleep(3 * time.Second)
	srv.Release("cxq")
	// The last 429 is the one after which the stub hears nothing for 6 s
	// (Codex's backoff between retries stays under 4 s). The truth is written
	// then, at its send time.
	n := 0
	harness.Eventually(t, 120*time.Second, func() string {
		es := srv.ModelExchanges(func(e stub.Exchange) bool { return e.Status == 429 && e.Completed })
		switch {
		case len(es) == 0 || len(es) != n:
			n = len(es)
			if n > 0 {
				sent = es[n-1].Done
			}
			return "codex still sends requests"
		case time.Since(sent) < 6*time.Second:
			return "codex has not given up yet"
		}
		return ""
	})
	t.Logf("codex tui gave up after %d HTTP 429 replies", n)
	tr.setAt(sent, "running|idle!quota")
	tr.setAt(sent.Add(2*time.Second), "idle!quota")
	time.Sleep(3 * time.Second)
	if out := os.Getenv("AGENTCTL_ACCURACY_KEEP"); out != "" {
		keepCodexHome(t, c, filepath.Join(out, "codex-tui-quota"))
	}

	// A turn that succeeds after it: no longer blocked.
	tr.between("idle!quota", "running")
	codexTUIPrompt(t, p, srv, "accuracy again HOLD=cxacc3", "cxacc3")
	tr.set("running")
	time.Sleep(3 * time.Second)
	srv.Release("cxacc3")
	harness.Eventually(t, 60*time.Second, func() string {
		es := srv.ModelExchanges(func(e stub.Exchange) bool { return strings.Contains(e.Request.LastUser, "HOLD=cxacc3") && e.Completed })
		if len(es) == 0 {
			return "the held reply was not sent"
		}
		sent = es[0].Done
		return ""
	})
	tr.setAt(sent, "running|idle")
	time.Sleep(time.Until(sent.Add(2 * time.Second)))
	tr.set("idle")
	time.Sleep(3 * time.Second)

	// The end, the way a user ends it: /quit, then `codex app-server daemon
	// stop`. The TUI leaves its app-server daemon running, and the daemon
	// keeps the thread loaded and its writer lock held (traced for 20 s
	// after /quit, until the daemon stopped): any client (the TUI again,
	// `codex resume`, an IDE) continues the thread in that process, and no
	// other writer may take it. agentctl cannot see whether a client is
	// attached; the thread's writer lives, so it is idle, hosted by the
	// daemon (docs/agents/codex.md §4.3), until the daemon lets it go.
	typeCodexQuit(t, p)
	time.Sleep(4 * time.Second)
	harness.Eventually(t, 15*time.Second, func() string { // the TUI may take longer to quit under load
		if st := a.Status(t, id); st.Status != "idle" || !strings.Contains(st.EvidenceDetail, "app-server daemon") {
			return fmt.Sprintf("after /quit: %s (%s); want idle, held by the TUI's app-server daemon", st.Status, st.EvidenceDetail)
		}
		return ""
	})
	tr.between("idle", "stopped")
	stop := exec.Command(c.Bin, "app-server", "daemon", "stop")
	stop.Dir, stop.Env = dir, c.Env.List()
	if out, err := stop.CombinedOutput(); err != nil {
		t.Fatalf("codex app-server daemon stop: %v\n%s", err, out)
	}
	tr.set("stopped")
	time.Sleep(3 * time.Second)
	s.finish(t, "Codex "+c.Version+" TUI: held reply, approval prompt, approve, 3 s command, held reply, reply, held 429, held reply, reply, /quit, daemon stop", &tr)
}

// keepCodexHome copies the rollouts and the thread_history database (with its
// WAL, the daemon's writes not yet checkpointed) of c's CODEX_HOME to dst.
func keepCodexHome(t *testing.T, c *harness.Codex, dst string) {
	t.Helper()
	home := filepath.Join(c.Home, ".codex")
	files, _ := filepath.Glob(filepath.Join(home, "thread_history_*.sqlite*"))
	files = append(files, c.Rollouts()...)
	for _, f := range files {
		rel, _ := filepath.Rel(home, f)
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, ".codex", rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, ".codex", rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("kept %d files of CODEX_HOME in %s", len(files), dst)
}

// codexTUIPrompt types a prompt into the Codex TUI and presses Enter until the
// stub holds its request as hold (Enter right after the text can be taken as
// part of a paste; Codex may show "loading" for a long while on a busy machine).
func codexTUIPrompt(t *testing.T, p *harness.PTY, srv *stub.Server, prompt, hold string) {
	t.Helper()
	p.Type(t, prompt)
	for i := 0; ; i++ {
		time.Sleep(time.Second)
		p.Type(t, "\r")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := srv.WaitHeld(ctx, hold)
		cancel()
		if err == nil {
			return
		}
		if i == 30 {
			t.Fatalf("the prompt never reached the stub\nscreen:\n%s", harness.Tail(harness.StripANSI(p.Output()), 15))
		}
	}
}

// typeCodexQuit quits the Codex TUI with /quit, pressing Enter until it exits.
func typeCodexQuit(t *testing.T, p *harness.PTY) {
	t.Helper()
	p.Type(t, "/quit")
	for i := 0; ; i++ {
		time.Sleep(time.Second)
		select {
		case <-p.Done():
			return
		default:
		}
		if i == 20 {
			t.Fatalf("the TUI did not quit\nscreen:\n%s", harness.Tail(harness.StripANSI(p.Output()), 15))
		}
		p.Type(t, "\r")
	}
}

// toolSent waits until the stub has sent a whole reply asking for a tool call
// and returns when it did.
func toolSent(t *testing.T, srv *stub.Server) time.Time {
	t.Helper()
	var at time.Time
	harness.Eventually(t, 60*time.Second, func() string {
		es := srv.ModelExchanges(func(e stub.Exchange) bool { return e.Reply.Tool != nil && e.Completed })
		if len(es) == 0 {
			return "the stub has not sent the tool call"
		}
		at = es[len(es)-1].Done
		return ""
	})
	return at
}

// waitHeldFor is waitHeld with a longer limit: on a loaded machine an agent can
// take minutes to start.
func waitHeldFor(t *testing.T, srv *stub.Server, name string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := srv.WaitHeld(ctx, name); err != nil {
		t.Fatal(err)
	}
}

// blockedRun scores a print-mode run whose model replies, once hold is released,
// are all HTTP code: running while held and while the agent retries (the stub
// sends at least n such replies); after the last error reply the agent gives
// up, records the error and exits, moments the harness cannot pin, so running,
// idle and failed (blocked on reason) all count from that reply to the exit;
// failed and blocked after it. The last reply is known once the agent exited:
// the truth is written then, at the stub's send time.
func blockedRun(t *testing.T, name string, a *harness.Agentctl, srv *stub.Server, id, hold string, code, n int, reason string, p *harness.Proc) {
	t.Helper()
	var tr truth
	tr.set("running")
	s := startSampler(t, a, id)
	time.Sleep(3 * time.Second)
	srv.Release(hold)
	errs := func() []stub.Exchange {
		return srv.ModelExchanges(func(e stub.Exchange) bool { return e.Status == code && e.Completed })
	}
	harness.Eventually(t, 180*time.Second, func() string {
		if es := errs(); len(es) < n {
			return fmt.Sprintf("%d of %d HTTP %d replies sent", len(es), n, code)
		}
		return ""
	})
	p.Wait(t, 180*time.Second)
	exited := time.Now()
	es := errs()
	last := es[len(es)-1].Done
	tr.setAt(last, "running|idle!"+reason+"|failed!"+reason)
	tr.setAt(exited, "failed!"+reason)
	t.Logf("%s: %d HTTP %d replies; the agent exited %s after the first, %s after the last", name, len(es), code,
		exited.Sub(es[0].Done).Round(100*time.Millisecond), exited.Sub(last).Round(100*time.Millisecond))
	time.Sleep(3 * time.Second)
	s.finish(t, name, &tr)
}

// Claude Code -p out of quota: every reply is 429. Claude retries (here once:
// CLAUDE_CODE_MAX_RETRIES=1), then writes "API Error: 429 …" as the
// transcript's last record and exits.
func TestStatusAccuracyClaudePrintQuota(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewClaude(t, harness.ClaudeNewest, srv)
	c.Env = c.Env.With("CLAUDE_CODE_MAX_RETRIES", "1")
	dir := harness.WorkDir(t, "acc")
	a := harness.NewAgentctl(t, c.Home)
	id := uuid.NewString()
	p := c.Print(t, dir, "accuracy HOLD=cq STATUS=429", "--session-id", id)
	waitHeldFor(t, srv, "cq", 180*time.Second)
	waitFile(t, c.Transcript(dir, id))
	blockedRun(t, "Claude Code "+c.Version+" -p: held reply, 429 (one retry), exit", a, srv, id, "cq", 429, 2, "quota", p)
}

// Pi -p out of quota: the reply after a tool call is held, then every reply is
// 429. Pi retries (here once: settings retry.maxRetries 1), records the
// assistant message with stopReason "error" and exits.
func TestStatusAccuracyPiPrintQuota(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, func(r *stub.Request) stub.Reply {
		rep := stub.Keywords(r)
		if r.ToolResult {
			rep = stub.Reply{Hold: "piq", Status: 429}
		}
		return rep
	})
	pi := harness.NewPi(t, srv)
	if err := os.WriteFile(filepath.Join(pi.Home, ".pi", "agent", "settings.json"), []byte(`{"retry":{"maxRetries":1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := harness.WorkDir(t, "acc")
	a := harness.NewAgentctl(t, pi.Home)
	// Pi writes nothing before its first reply: the 429s follow a tool call.
	p := pi.Print(t, dir, "accuracy TOOLCMD: echo acc")
	id := p.WaitStdout(t, 180*time.Second, "session header", harness.PiSessionID)
	waitHeldFor(t, srv, "piq", 180*time.Second)
	harness.Eventually(t, 10*time.Second, func() string {
		if len(pi.Sessions()) != 1 {
			return "no session file yet"
		}
		return ""
	})
	blockedRun(t, "Pi -p: held reply after a tool call, 429 (one retry), exit", a, srv, id, "piq", 429, 2, "quota", p)
}

// OpenCode run with a rejected key: the held reply is a 401, which OpenCode
// records as ProviderAuthError on the assistant message (not retried).
func TestStatusAccuracyOpenCodeRunAuth(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	oc := harness.NewOpenCode(t, srv)
	dir := harness.WorkDir(t, "acc")
	a := harness.NewAgentctl(t, oc.Home)
	p := oc.Run(t, dir, "accuracy HOLD=oca STATUS=401")
	waitHeldFor(t, srv, "oca", 400*time.Second)
	id := openCodeSessionIn(t, oc, dir)
	blockedRun(t, "OpenCode run: held reply, 401, exit", a, srv, id, "oca", 401, 1, "auth", p)
}

// The Pi TUI on a pty: idle after a first reply (pi writes its session file
// only then), running while a reply is held, idle after it, running while the
// provider answers 429 and pi retries (once: settings retry.maxRetries 1), idle
// and blocked on quota once it gives up, failed and blocked after /quit (the
// session's last turn is the error).
func TestStatusAccuracyPiTUI(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	pi := harness.NewPi(t, srv)
	if err := os.WriteFile(filepath.Join(pi.Home, ".pi", "agent", "settings.json"), []byte(`{"retry":{"maxRetries":1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := harness.WorkDir(t, "acc")
	p := harness.StartPTY(t, harness.Spec{Path: pi.Bin, Args: []string{"--provider", "fakeoai", "--model", "fake-model"},
		Dir: dir, Env: pi.Env.With("PWD", dir).With("TERM", "xterm-256color"), Name: "pi-tui-acc"})
	a := harness.NewAgentctl(t, pi.Home)
	p.WaitOutput(t, 120*time.Second, 0, "fake-model")
	time.Sleep(2 * time.Second) // the editor takes keys a moment after it is drawn
	from := p.Len()
	typeLine(t, p, "first")
	p.WaitOutput(t, 60*time.Second, from, "FAKE-REPLY")
	harness.Eventually(t, 30*time.Second, func() string {
		if len(pi.Sessions()) != 1 {
			return "no session file yet"
		}
		return ""
	})
	id := pi.Sessions()[0]
	id = strings.TrimSuffix(id[len(id)-len("01a1faea-41e2-70ee-8a46-eefd8057a11e.jsonl"):], ".jsonl")
	var tr truth
	tr.set("idle")
	s := startSampler(t, a, id)
	time.Sleep(3 * time.Second)

	tr.between("idle", "running")
	typeLine(t, p, "accuracy HOLD=pitui")
	waitHeld(t, srv, "pitui")
	tr.set("running")
	time.Sleep(3 * time.Second)
	srv.Release("pitui")
	var sent time.Time
	harness.Eventually(t, 30*time.Second, func() string {
		es := srv.ModelExchanges(func(e stub.Exchange) bool { return strings.Contains(e.Request.LastUser, "HOLD=pitui") && e.Completed })
		if len(es) == 0 {
			return "the held reply was not sent"
		}
		sent = es[0].Done
		return ""
	})
	tr.setAt(sent, "running|idle")
	time.Sleep(time.Until(sent.Add(2 * time.Second)))
	tr.set("idle")
	time.Sleep(3 * time.Second)

	tr.between("idle", "running")
	typeLine(t, p, "accuracy quota STATUS=429")
	harness.Eventually(t, 30*time.Second, func() string {
		if len(srv.ModelExchanges(func(e stub.Exchange) bool { return e.Status == 429 })) == 0 {
			return "no 429 sent yet"
		}
		return ""
	})
	tr.set("running")
	// Pi gives up after its own retry (2 s later) and the OpenAI client's
	// retries within each attempt: the last 429 is the one after which the
	// stub hears nothing for 5 s. The truth is written then, at its send time.
	n := 0
	harness.Eventually(t, 90*time.Second, func() string {
		es := srv.ModelExchanges(func(e stub.Exchange) bool { return e.Status == 429 && e.Completed })
		switch {
		case len(es) < 2:
			return "pi did not retry the 429"
		case len(es) != n:
			n, sent = len(es), es[len(es)-1].Done
			return "pi still sends requests"
		case time.Since(sent) < 5*time.Second:
			return "pi has not given up yet"
		}
		return ""
	})
	t.Logf("pi gave up after %d HTTP 429 replies", n)
	tr.setAt(sent, "running|idle!quota")
	tr.setAt(sent.Add(2*time.Second), "idle!quota")
	time.Sleep(3 * time.Second)

	tr.between("idle!quota", "failed!quota")
	typeLine(t, p, "/quit")
	p.Wait(t, 30*time.Second)
	tr.set("failed!quota")
	time.Sleep(3 * time.Second)
	s.finish(t, "Pi "+pi.Version+" TUI: reply, held reply, reply, 429 (one retry), /quit", &tr)
}
