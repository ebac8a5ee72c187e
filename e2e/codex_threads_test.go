package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// appServer is `codex app-server` spoken to over stdio JSON-RPC (one JSON object
// a line, docs/agents/codex.md §11).
type appServer struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	mu    sync.Mutex
	next  int
	resp  map[int]chan json.RawMessage
	notes chan note
}

type note struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func startAppServer(t *testing.T, c *harness.Codex, dir string) *appServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, c.Bin, "app-server")
	cmd.Dir, cmd.Env = dir, c.Env.With("PWD", dir).List()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errf, err := os.Create(filepath.Join(t.TempDir(), "app-server.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = errf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &appServer{t: t, cmd: cmd, in: in, resp: map[int]chan json.RawMessage{}, notes: make(chan note, 4096)}
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cancel()
			<-done
		}
		cancel()
		errf.Close()
	})
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m struct {
				ID     *int            `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			switch {
			case m.ID != nil && m.Method == "":
				s.mu.Lock()
				ch := s.resp[*m.ID]
				s.mu.Unlock()
				if ch != nil {
					if len(m.Error) > 0 && string(m.Error) != "null" {
						ch <- json.RawMessage(`{"error":` + string(m.Error) + `}`)
					} else {
						ch <- m.Result
					}
				}
			case m.Method != "":
				select {
				case s.notes <- note{m.Method, m.Params}:
				default:
				}
			}
		}
	}()
	s.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "agentctl-e2e", "version": "0"}}, nil)
	s.send(map[string]any{"method": "initialized"})
	return s
}

func (s *appServer) send(v any) {
	b, _ := json.Marshal(v)
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatalf("app-server stdin: %v", err)
	}
}

// call sends one request and decodes its result into out (nil: ignored).
func (s *appServer) call(method string, params, out any) {
	s.t.Helper()
	s.mu.Lock()
	id := s.next
	s.next++
	ch := make(chan json.RawMessage, 1)
	s.resp[id] = ch
	s.mu.Unlock()
	s.send(map[string]any{"id": id, "method": method, "params": params})
	select {
	case r := <-ch:
		if strings.HasPrefix(string(r), `{"error":`) {
			s.t.Fatalf("app-server %s: %s", method, r)
		}
		if out != nil {
			if err := json.Unmarshal(r, out); err != nil {
				s.t.Fatalf("app-server %s: %v\n%s", method, err, r)
			}
		}
	case <-time.After(60 * time.Second):
		s.t.Fatalf("app-server %s: no answer in 60 s", method)
	}
}

// turn starts a turn with text and waits for its turn/completed; it returns the
// turn id.
func (s *appServer) turn(thread, text string) string {
	s.t.Helper()
	var r struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	s.call("turn/start", map[string]any{"threadId": thread, "input": []any{map[string]any{"type": "text", "text": text}}}, &r)
	deadline := time.After(90 * time.Second)
	for {
		select {
		case n := <-s.notes:
			if n.Method != "turn/completed" {
				continue
			}
			var p struct {
				Turn struct {
					ID     string `json:"id"`
					Status string `json:"status"`
				} `json:"turn"`
			}
			json.Unmarshal(n.Params, &p)
			if p.Turn.ID == r.Turn.ID {
				if p.Turn.Status != "completed" {
					s.t.Fatalf("turn %q ended %s", text, p.Turn.Status)
				}
				return r.Turn.ID
			}
		case <-deadline:
			s.t.Fatalf("turn %q: no turn/completed in 90 s", text)
		}
	}
}

// TestCodexThreadAcrossFiles: a real 0.169 app-server thread reverted twice
// (`thread/revert`) spans three rollout files; agentctl lists it once, with
// Codex's own cumulative total from the newest file, the first prompt, and a
// peek that reads across the files.
func TestCodexThreadAcrossFiles(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewCodex(t, srv)
	dir := harness.WorkDir(t, "ledger")
	s := startAppServer(t, c, dir)

	var started struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	s.call("thread/start", map[string]any{"cwd": dir}, &started)
	id := started.Thread.ID
	prompts := []string{"First: list the ledgers", "Second: sum them", "Third: explain"}
	var turns []string
	for _, p := range prompts {
		turns = append(turns, s.turn(id, p))
	}
	s.call("thread/revert", map[string]any{"threadId": id, "beforeTurnId": turns[2]}, nil)
	t4 := s.turn(id, "Fourth: after the first revert")
	_ = t4
	s.call("thread/revert", map[string]any{"threadId": id, "beforeTurnId": turns[1]}, nil)
	s.turn(id, "Fifth: after the second revert")

	var listed json.RawMessage
	s.call("thread/list", map[string]any{}, &listed)
	t.Logf("thread/list: %s", listed)
	var files []string
	filepath.WalkDir(filepath.Join(c.Home, ".codex"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	keep := os.Getenv("CODEX_THREADS_KEEP")
	for _, f := range files {
		t.Logf("file %s", strings.TrimPrefix(f, c.Home))
		if keep != "" && strings.Contains(f, "rollout-") {
			b, _ := os.ReadFile(f)
			os.MkdirAll(keep, 0o755)
			os.WriteFile(filepath.Join(keep, filepath.Base(f)), b, 0o644)
		}
	}
	if keep != "" {
		cmd := exec.Command("cp", "-a", filepath.Join(c.Home, ".codex"), filepath.Join(keep, "codex-home"))
		cmd.Run()
	}
	fmt.Println()
}
