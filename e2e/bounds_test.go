package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
)

// Hostile files in the agents' directories (README "Robustness"): each must
// cost bounded time and memory, at most a warning, and never take the clean
// session next to it out of the listing. The wall time and peak RSS of each
// `list -a --json` are logged (`go test -v -run TestResourceBounds ./e2e/`);
// the README's table comes from that. The assertions are bounds that only a
// hang or a whole-file buffer can break: 60 s and 300 MB.
func TestResourceBounds(t *testing.T) {
	harness.Require(t)
	const (
		clean    = "0c1ea000-0000-4000-8000-000000000001"
		bigID    = "1a9e0000-0000-4000-8000-000000000006"
		bigTurns = 1_000_000
		maxWall  = 60 * time.Second
		maxRSS   = 300 << 20
	)
	cases := []struct {
		name  string
		short bool // also run under -short
		make  func(t *testing.T, proj string)
	}{
		{"FIFO named like a transcript", true, func(t *testing.T, proj string) {
			if err := syscall.Mkfifo(filepath.Join(proj, "0f1f0000-0000-4000-8000-000000000002.jsonl"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"device node named like a transcript", true, func(t *testing.T, proj string) {
			symlink(t, "/dev/zero", filepath.Join(proj, "0de70000-0000-4000-8000-000000000003.jsonl"))
		}},
		{"symlink loops", true, func(t *testing.T, proj string) {
			symlink(t, "b.jsonl", filepath.Join(proj, "a.jsonl"))
			symlink(t, "a.jsonl", filepath.Join(proj, "b.jsonl"))
			symlink(t, ".", filepath.Join(proj, "loop"))
			symlink(t, "..", filepath.Join(filepath.Dir(proj), "up"))
		}},
		{"deeply nested JSON", true, func(t *testing.T, proj string) {
			depth := 1 << 20
			line := `{"type":"user","sessionId":"0dee0000-0000-4000-8000-000000000004","message":{"role":"user","content":` +
				strings.Repeat("[", depth) + strings.Repeat("]", depth) + "}}\n"
			write(t, filepath.Join(proj, "0dee0000-0000-4000-8000-000000000004.jsonl"), line)
		}},
		{"100 MB line", false, func(t *testing.T, proj string) {
			id := "100b0000-0000-4000-8000-000000000005"
			fillTranscript(t, filepath.Join(proj, id+".jsonl"), id, 1, 100<<20)
		}},
		{"1 GB transcript of a million lines", false, func(t *testing.T, proj string) {
			fillTranscript(t, filepath.Join(proj, bigID+".jsonl"), bigID, bigTurns, 1<<30)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && !tc.short {
				t.Skip("writes hundreds of MB; runs without -short")
			}
			home := harness.TempDir(t)
			proj := filepath.Join(home, ".claude", "projects", "-work-app")
			if err := os.MkdirAll(proj, 0o700); err != nil {
				t.Fatal(err)
			}
			fillTranscript(t, filepath.Join(proj, clean+".jsonl"), clean, 4, 4<<10)
			tc.make(t, proj)
			a := harness.NewAgentctl(t, home)
			cmd := exec.Command(a.Bin, "list", "-a", "--json", "--adapter", "claude-code", "--timeout", "30s", "--home", home)
			cmd.Env = a.Env.List()
			var out, errOut strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errOut
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			exited := make(chan struct{})
			go func() {
				err := cmd.Wait()
				close(exited)
				done <- err
			}()
			anon := sampleRssAnon(cmd.Process.Pid, exited)
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("list -a: %v\n%s", err, errOut.String())
				}
			case <-time.After(maxWall):
				cmd.Process.Kill()
				<-done
				t.Fatalf("list -a hung (> %s)\nstderr:\n%s", maxWall, errOut.String())
			}
			wall := time.Since(start)
			// Peak RSS counts the pages of a memory-mapped transcript, which the
			// kernel can drop at any time; peak anonymous RSS is what agentctl
			// itself holds, and what must not grow with a file's size.
			rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
			peakAnon := <-anon
			t.Logf("%s: %s wall, %d MB peak RSS (%d MB anonymous); warnings: %q", tc.name,
				wall.Round(time.Millisecond), rss>>20, peakAnon>>20, strings.TrimSpace(errOut.String()))
			if peakAnon > maxRSS {
				t.Errorf("peak anonymous RSS %d MB > %d MB: a file is buffered whole", peakAnon>>20, maxRSS>>20)
			}
			if strings.Contains(out.String(), bigID) {
				var ss []harness.Session
				if err := json.Unmarshal([]byte(out.String()), &ss); err != nil {
					t.Fatal(err)
				}
				if s, _ := harness.Find(ss, bigID); s.Tokens == nil || s.Tokens.Output != 5*bigTurns {
					t.Errorf("1 GB session: tokens %+v, want output %d (every line counted)", s.Tokens, 5*bigTurns)
				}
			}
			if !strings.Contains(out.String(), clean) {
				t.Errorf("the clean session next to the hostile file is missing:\n%s", out.String())
			}
			if strings.ContainsAny(errOut.String(), "\x1b\x00") {
				t.Errorf("raw control bytes in the warnings: %q", errOut.String())
			}
		})
	}
}

// sampleRssAnon polls /proc/PID/status every 5 ms until exited is closed, then
// sends the largest RssAnon seen, in bytes.
func sampleRssAnon(pid int, exited <-chan struct{}) <-chan int64 {
	peak := make(chan int64, 1)
	go func() {
		var max int64
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
				for _, l := range strings.Split(string(b), "\n") {
					var kb int64
					if _, err := fmt.Sscanf(l, "RssAnon: %d kB", &kb); err == nil && kb<<10 > max {
						max = kb << 10
					}
				}
			}
			select {
			case <-exited:
				peak <- max
				return
			case <-tick.C:
			}
		}
	}()
	return peak
}

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fillTranscript writes a Claude transcript of about size bytes in n turns: a
// user prompt, then assistant lines whose text fills the turn's share. Request
// ids carry the session's, as real ones are unique: two transcripts whose
// first request ids match are a fork family, which is read again request by
// request (README "Robustness").
func fillTranscript(t *testing.T, path, id string, turns int, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	// An hour ago: inside list -a's default 7-day window whenever the test runs.
	ts := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	per := size / int64(turns)
	pad := strings.Repeat("x", int(max(per-600, 1)))
	for i := 0; i < turns; i++ {
		at := ts.Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano)
		if i == 0 {
			fmt.Fprintf(w, `{"type":"user","sessionId":%q,"cwd":"/work/app","timestamp":%q,"uuid":"u0","message":{"role":"user","content":"hello"}}`+"\n", id, at)
		}
		fmt.Fprintf(w, `{"type":"assistant","sessionId":%q,"cwd":"/work/app","timestamp":%q,"requestId":"req_%.8s%d","message":{"id":"msg_%.8s%d","role":"assistant","model":"claude-sonnet-4-20250514","content":[{"type":"text","text":%q}],"usage":{"input_tokens":3,"output_tokens":5,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}}`+"\n", id, at, id, i, id, i, pad)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// An unreadable transcript and an unreadable project directory beside a clean
// session: `list -a` lists the clean one, exits 0 and at most warns. Root reads
// everything, so as root the binary runs as nobody (uid 65534) over a copy of
// itself and a home it can traverse.
func TestUnreadableFiles(t *testing.T) {
	harness.Require(t)
	const clean = "0c1ea000-0000-4000-8000-000000000001"
	root, err := os.MkdirTemp("", "agentctl-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = filepath.WalkDir(root, func(p string, _ os.DirEntry, _ error) error { _ = os.Chmod(p, 0o755); return nil })
		os.RemoveAll(root)
	})
	mk := func(p string, mode os.FileMode) {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	home, state, tmp, bin := filepath.Join(root, "home"), filepath.Join(root, "state"), filepath.Join(root, "tmp"), filepath.Join(root, "bin")
	proj := filepath.Join(home, ".claude", "projects", "-work-app")
	for _, d := range []string{root, home, filepath.Join(home, ".claude"), filepath.Join(home, ".claude", "projects"), proj, bin} {
		mk(d, 0o755)
	}
	mk(state, 0o777)
	mk(tmp, 0o777)
	fillTranscript(t, filepath.Join(proj, clean+".jsonl"), clean, 4, 4<<10)
	os.Chmod(filepath.Join(proj, clean+".jsonl"), 0o644)
	locked := "10cced00-0000-4000-8000-000000000002"
	fillTranscript(t, filepath.Join(proj, locked+".jsonl"), locked, 4, 4<<10)
	os.Chmod(filepath.Join(proj, locked+".jsonl"), 0)
	closed := filepath.Join(home, ".claude", "projects", "-work-closed")
	mk(closed, 0o755)
	fillTranscript(t, filepath.Join(closed, "c105ed00-0000-4000-8000-000000000003.jsonl"), "c105ed00-0000-4000-8000-000000000003", 4, 4<<10)
	mk(closed, 0)

	b, err := os.ReadFile(harness.AgentctlBin(t))
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(bin, "agentctl")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "list", "-a", "--json", "--adapter", "claude-code", "--home", home)
	cmd.Env = harness.BaseEnv(home, tmp).With("AGENTCTL_HOME", state).With("NO_COLOR", "1").List()
	cmd.Dir = root
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("list -a over unreadable files: %v\n%s", err, errOut.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("list -a hung over unreadable files\n%s", errOut.String())
	}
	t.Logf("%s; warnings: %q", time.Since(start).Round(time.Millisecond), strings.TrimSpace(errOut.String()))
	var ss []harness.Session
	if err := json.Unmarshal([]byte(out.String()), &ss); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if _, ok := harness.Find(ss, clean); !ok {
		t.Errorf("the clean session beside unreadable files is missing:\n%s", out.String())
	}
	if _, ok := harness.Find(ss, locked); ok {
		t.Errorf("a transcript agentctl cannot read was listed as if read:\n%s", out.String())
	}
}
