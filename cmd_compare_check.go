package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/launch/worktree"
	"github.com/agentctl/agentctl/meta"
)

// compareCheck is one --check result in a row of `compare --json`.
type compareCheck struct {
	meta.CheckResult
	// Stale: the worktree's content changed since the check ran.
	Stale     bool      `json:"stale"`
	CheckedAt time.Time `json:"checked_at"`
}

// defaultCheckTimeout is --check-timeout's default.
const defaultCheckTimeout = 10 * time.Minute

// outputTailLines and outputTailBytes bound a check's kept output.
const (
	outputTailLines = 20
	outputTailBytes = 4000
)

// sortKeys are --sort's values.
var sortKeys = []string{"check", "cost", "tokens", "duration", "diff"}

// runChecks runs every command in each ended slot's worktree, at most one
// check per core at once, and keeps the results with the group.
func (cp *comparer) runChecks(ctx context.Context, out *compareOut, cmds []string, timeout time.Duration) {
	type job struct {
		row  *compareSlot
		head string
		tree string
	}
	var jobs []*job
	for i := range out.Slots {
		r := &out.Slots[i]
		switch {
		case r.alive:
			r.CheckSkipped = "the session is still " + r.Status + "; check again once it ended (agentctl wait " + orDash(r.SessionID) + ")"
		case r.Worktree == "" || !dirExists(r.Worktree):
			r.CheckSkipped = "the slot has no worktree"
		default:
			jobs = append(jobs, &job{row: r})
		}
	}
	sem := make(chan struct{}, max(1, runtime.NumCPU()))
	var wg sync.WaitGroup
	results := make([][]meta.CheckResult, len(jobs))
	for i, j := range jobs {
		head, err := worktree.WorktreeHead(ctx, j.row.Worktree)
		if err == nil {
			j.head = head
			j.tree, err = worktree.WorktreeTree(ctx, j.row.Worktree)
		}
		if err != nil {
			j.row.CheckSkipped = "cannot read the worktree: " + err.Error()
			continue
		}
		results[i] = make([]meta.CheckResult, len(cmds))
		for k, c := range cmds {
			wg.Add(1)
			go func(i, k int, dir, c string) {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				results[i][k] = runCheck(ctx, dir, c, timeout)
			}(i, k, j.row.Worktree, c)
		}
	}
	wg.Wait()
	now := cp.s.now()
	var recs []meta.CheckRecord
	for i, j := range jobs {
		if results[i] == nil {
			continue
		}
		recs = append(recs, meta.CheckRecord{Group: out.Group, Branch: j.row.Branch, SessionID: j.row.SessionID,
			Head: j.head, Tree: j.tree, At: now, Results: results[i]})
		setChecks(j.row, results[i], now, false)
	}
	if cp.store.LaunchTTL == 0 {
		cp.store.ApplyConfig(cp.config) // the records expire with the launch records (config launch_ttl)
	}
	err := cp.store.UpdateChecks(func(c *meta.Checks) (bool, error) {
		for _, nr := range recs {
			kept := c.Records[:0]
			for _, r := range c.Records {
				if r.Group != nr.Group || r.Branch != nr.Branch {
					kept = append(kept, r)
				}
			}
			c.Records = append(kept, nr)
		}
		return len(recs) > 0, nil
	})
	if err != nil {
		warn(cp.s, "the check results could not be kept for a later compare: "+err.Error())
	}
}

// attachChecks shows the last kept results of slots not checked now, marked
// stale when the worktree's content changed since.
func (cp *comparer) attachChecks(ctx context.Context, out *compareOut) {
	recs, err := cp.store.ReadChecks()
	if err != nil {
		warn(cp.s, "kept check results unreadable: "+err.Error())
		return
	}
	for i := range out.Slots {
		r := &out.Slots[i]
		for _, c := range recs {
			if c.Group != out.Group || c.Branch != r.Branch {
				continue
			}
			stale := true
			if r.Worktree != "" && dirExists(r.Worktree) {
				if t, err := worktree.WorktreeTree(ctx, r.Worktree); err == nil && t == c.Tree {
					stale = false
				}
			} else if worktree.BranchExists(ctx, out.Repo, r.Branch) {
				// The worktree went (cleaned, its leftovers committed): the branch holds what was checked.
				if t, err := worktree.TreeOf(ctx, out.Repo, r.Branch); err == nil && t == c.Tree {
					stale = false
				}
			}
			setChecks(r, c.Results, c.At, stale)
		}
	}
}

func setChecks(r *compareSlot, res []meta.CheckResult, at time.Time, stale bool) {
	cs := make([]compareCheck, len(res))
	for i, c := range res {
		cs[i] = compareCheck{CheckResult: c, Stale: stale, CheckedAt: at}
	}
	r.Check, r.Checks = nil, nil
	if len(cs) == 1 {
		r.Check = &cs[0]
	} else {
		r.Checks = cs
	}
}

// runCheck runs one command with sh -c in dir, its whole process group killed
// at the timeout.
func runCheck(ctx context.Context, dir, command string, timeout time.Duration) meta.CheckResult {
	res := meta.CheckResult{Command: command}
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var buf tailBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	if err := cmd.Start(); err != nil {
		res.Error = err.Error()
		return res
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(timeout):
		res.TimedOut = true
	case <-ctx.Done():
		res.Error = "interrupted"
	}
	if res.TimedOut || res.Error != "" {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
	}
	res.DurationMS = time.Since(start).Milliseconds()
	var ee *exec.ExitError
	switch {
	case res.TimedOut || res.Error != "":
	case err == nil:
		code := 0
		res.ExitCode = &code
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		code := ee.ExitCode()
		res.ExitCode = &code
	default:
		res.Error = err.Error()
	}
	res.Passed = res.ExitCode != nil && *res.ExitCode == 0
	res.OutputTail = buf.tail()
	if res.TimedOut {
		res.OutputTail += fmt.Sprintf("\n[agentctl: killed after %s (--check-timeout)]", timeout)
	}
	return res
}

// tailBuffer keeps the last bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4*outputTailBytes {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-outputTailBytes:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := bytes.TrimRight(t.buf, "\n")
	if len(b) > outputTailBytes {
		b = b[len(b)-outputTailBytes:]
	}
	ls := strings.Split(string(b), "\n")
	if len(ls) > outputTailLines {
		ls = ls[len(ls)-outputTailLines:]
	}
	return strings.ToValidUTF8(strings.Join(ls, "\n"), "�")
}

// rowChecks are a row's check results, one or several.
func rowChecks(r compareSlot) []compareCheck {
	if r.Check != nil {
		return []compareCheck{*r.Check}
	}
	return r.Checks
}

// sortSlots orders rows by --sort: most checks passed first; then least cost,
// tokens, duration or changed lines. Unknown values go last; ties keep the
// slot order.
func sortSlots(slots []compareSlot, key string) {
	val := func(r compareSlot) (float64, bool) {
		switch key {
		case "check":
			cs := rowChecks(r)
			if len(cs) == 0 {
				return 0, false
			}
			n := 0
			for _, c := range cs {
				if c.Passed {
					n++
				}
			}
			return -float64(n), true
		case "cost":
			if r.CostUSD == nil {
				return 0, false
			}
			return *r.CostUSD, true
		case "tokens":
			if r.TokensTotal == nil {
				return 0, false
			}
			return float64(*r.TokensTotal), true
		case "duration":
			if r.DurationSeconds == nil {
				return 0, false
			}
			return *r.DurationSeconds, true
		case "diff":
			if r.Diff == nil {
				return 0, false
			}
			return float64(r.Diff.Insertions + r.Diff.Deletions), true
		}
		return 0, false
	}
	sort.SliceStable(slots, func(i, j int) bool {
		a, aok := val(slots[i])
		b, bok := val(slots[j])
		if aok != bok {
			return aok
		}
		return aok && a < b
	})
}

// checkCells are a row's ✓/✗ cells, one per check column.
func checkCells(r compareSlot, n int) []string {
	cells := make([]string, n)
	cs := rowChecks(r)
	for i := range cells {
		switch {
		case i < len(cs):
			c := cs[i]
			switch {
			case c.Passed:
				cells[i] = "✓"
			case c.TimedOut:
				cells[i] = "✗ timeout"
			case c.ExitCode != nil:
				cells[i] = fmt.Sprintf("✗ %d", *c.ExitCode)
			default:
				cells[i] = "✗ error"
			}
			if c.Stale {
				cells[i] += " (stale)"
			}
		case r.CheckSkipped != "":
			cells[i] = "skipped"
		default:
			cells[i] = "-"
		}
	}
	return cells
}

// checkColumns is how many check columns the table needs, and their commands.
func checkColumns(out compareOut) []string {
	var cmds []string
	for _, r := range out.Slots {
		if cs := rowChecks(r); len(cs) > len(cmds) {
			cmds = cmds[:0]
			for _, c := range cs {
				cmds = append(cmds, c.Command)
			}
		}
	}
	return cmds
}
