package e2e

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
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
	_ "modernc.org/sqlite"
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

// TestCodexThreadAcrossFiles: a real app-server thread (codex-cli 0.169) with
// three turns, reverted before the third (`thread/revert`), a fourth turn,
// reverted before the second, a fifth: Codex now keeps it in three rollout files
// (docs/agents/codex.md §1.1). agentctl lists it once, as Codex's state DB does
// (one threads row whose rollout_path is the newest file): its id, Codex's own
// total (threads.tokens_used, never a sum over the files), the first prompt, the
// start of the first turn, one session in `usage`, and a peek of the history
// Codex kept (turn 1, then turn 5).
func TestCodexThreadAcrossFiles(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewCodex(t, srv)
	dir := harness.WorkDir(t, "ledger")
	a := harness.NewAgentctl(t, c.Home)
	s := startAppServer(t, c, dir)

	var started struct {
		Thread struct {
			ID        string `json:"id"`
			CreatedAt int64  `json:"createdAt"`
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
	s.turn(id, "Fourth: after the first revert")
	s.call("thread/revert", map[string]any{"threadId": id, "beforeTurnId": turns[1]}, nil)
	s.turn(id, "Fifth: after the second revert")

	rollouts := c.Rollouts()
	if len(rollouts) != 3 {
		t.Fatalf("rollouts %v; want three files for the twice-reverted thread", rollouts)
	}
	keep(t, c, "reverted")

	// Codex's own view: the state DB's one row for the thread.
	row := codexThreadRow(t, c, id)
	if !strings.Contains(filepath.Base(row.path), id+"_") {
		t.Fatalf("threads.rollout_path %s: want a later file of %s", row.path, id)
	}
	if row.tokens <= 0 {
		t.Fatalf("threads.tokens_used %d", row.tokens)
	}

	check := func(what string, ss []harness.Session) {
		t.Helper()
		if len(ss) != 1 || ss[0].ID != id {
			var got []string
			for _, x := range ss {
				got = append(got, x.ID)
			}
			t.Fatalf("%s: sessions %v; want the one thread %s", what, got, id)
		}
		x := ss[0]
		if x.Tokens == nil || x.Tokens.Input+x.Tokens.CacheRead+x.Tokens.CacheWrite+x.Tokens.Output != row.tokens {
			t.Errorf("%s: tokens %+v; want them to add up to Codex's threads.tokens_used %d", what, x.Tokens, row.tokens)
		}
		if x.Prompt != prompts[0] {
			t.Errorf("%s: prompt %q, want %q", what, x.Prompt, prompts[0])
		}
		st, err := time.Parse(time.RFC3339Nano, x.StartedAt)
		if err != nil || st.Unix() != started.Thread.CreatedAt {
			t.Errorf("%s: started_at %s, want the thread's creation (%d, thread/start's createdAt)", what, x.StartedAt, started.Thread.CreatedAt)
		}
		if x.Cwd != dir {
			t.Errorf("%s: cwd %s, want %s", what, x.Cwd, dir)
		}
	}
	// The app-server still holds the thread: idle.
	alive := a.ListAlive(t)
	check("list (app-server alive)", alive)
	if alive[0].Status != "idle" {
		t.Errorf("list: status %s while the app-server holds the thread, want idle", alive[0].Status)
	}
	var all []harness.Session
	a.JSON(t, &all, "list", "-a", "--adapter", "codex")
	check("list -a", all)
	check("status", []harness.Session{a.Status(t, id)})

	var u struct {
		Total struct {
			Sessions    int   `json:"sessions"`
			TokensTotal int64 `json:"tokens_total"`
		} `json:"total"`
	}
	a.JSON(t, &u, "usage", "--adapter", "codex")
	if u.Total.Sessions != 1 || u.Total.TokensTotal != row.tokens {
		t.Errorf("usage: %d sessions, %d tokens; want 1 and Codex's %d", u.Total.Sessions, u.Total.TokensTotal, row.tokens)
	}

	var users []string
	for _, m := range a.Peek(t, id) {
		if m.Kind == "user" {
			users = append(users, m.Text)
		}
	}
	if want := []string{prompts[0], "Fifth: after the second revert"}; strings.Join(users, "|") != strings.Join(want, "|") {
		t.Errorf("peek prompts %q, want %q (the history Codex kept)", users, want)
	}

	// A fork (thread/fork): its own id and rollout, totals seeded with the
	// parent's. It says what it inherited, and usage counts that once.
	var forked struct {
		Thread struct {
			ID           string `json:"id"`
			ForkedFromID string `json:"forkedFromId"`
		} `json:"thread"`
	}
	s.call("thread/fork", map[string]any{"threadId": id}, &forked)
	fid := forked.Thread.ID
	if fid == "" || fid == id || forked.Thread.ForkedFromID != id {
		t.Fatalf("thread/fork: thread %q forked from %q", fid, forked.Thread.ForkedFromID)
	}
	s.turn(fid, "Sixth: in the fork")
	keep(t, c, "fork")
	frow := codexThreadRow(t, c, fid)
	var fl []struct {
		ID     string          `json:"id"`
		Prompt string          `json:"prompt"`
		Tokens *harness.Tokens `json:"tokens"`
		Extra  struct {
			ForkedFrom      string          `json:"forked_from"`
			TokensInherited *harness.Tokens `json:"tokens_inherited"`
		} `json:"extra"`
	}
	a.JSON(t, &fl, "list", "-a", "--adapter", "codex")
	if len(fl) != 2 {
		t.Fatalf("list -a after the fork: %d sessions, want the thread and its fork", len(fl))
	}
	sum := func(x *harness.Tokens) int64 {
		if x == nil {
			return -1
		}
		return x.Input + x.CacheRead + x.CacheWrite + x.Output
	}
	for _, x := range fl {
		switch x.ID {
		case fid:
			if sum(x.Tokens) != frow.tokens || x.Prompt != "Sixth: in the fork" {
				t.Errorf("fork: tokens %+v, prompt %q; want Codex's tokens_used %d and its own prompt", x.Tokens, x.Prompt, frow.tokens)
			}
			if x.Extra.ForkedFrom != id || sum(x.Extra.TokensInherited) != row.tokens {
				t.Errorf("fork: forked_from %q, tokens_inherited %+v; want %s and the parent's %d", x.Extra.ForkedFrom, x.Extra.TokensInherited, id, row.tokens)
			}
		case id:
			if sum(x.Tokens) != row.tokens || x.Extra.TokensInherited != nil {
				t.Errorf("parent after the fork: tokens %+v, inherited %+v", x.Tokens, x.Extra.TokensInherited)
			}
		default:
			t.Errorf("list -a after the fork: unexpected session %s", x.ID)
		}
	}
	a.JSON(t, &u, "usage", "--adapter", "codex")
	if want := row.tokens + (frow.tokens - row.tokens); u.Total.Sessions != 2 || u.Total.TokensTotal != want {
		t.Errorf("usage after the fork: %d sessions, %d tokens; want 2 and %d (the parent's, then the fork's own)", u.Total.Sessions, u.Total.TokensTotal, want)
	}
}

// keep copies the Codex home to $CODEX_THREADS_KEEP/<name> (how
// discover/codex/testdata/reverted and testdata/fork were recorded).
func keep(t *testing.T, c *harness.Codex, name string) {
	dst := os.Getenv("CODEX_THREADS_KEEP")
	if dst == "" {
		return
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(c.Home, ".codex"), filepath.Join(dst, name)).CombinedOutput(); err != nil {
		t.Logf("keep: %v %s", err, out)
	}
}

type codexRow struct {
	path   string
	tokens int64
}

// codexThreadRow reads the thread's row of Codex's state DB (read-only).
func codexThreadRow(t *testing.T, c *harness.Codex, id string) codexRow {
	t.Helper()
	dbs, _ := filepath.Glob(filepath.Join(c.Home, ".codex", "state_*.sqlite"))
	sort.Strings(dbs)
	if len(dbs) == 0 {
		t.Fatal("no state_*.sqlite")
	}
	db, err := sql.Open("sqlite", "file:"+dbs[len(dbs)-1]+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var r codexRow
	var n int
	if err := db.QueryRow("SELECT count(*) FROM threads WHERE id = ?", id).Scan(&n); err != nil || n != 1 {
		t.Fatalf("state DB: %d rows for %s (%v)", n, id, err)
	}
	if err := db.QueryRow("SELECT rollout_path, tokens_used FROM threads WHERE id = ?", id).Scan(&r.path, &r.tokens); err != nil {
		t.Fatal(err)
	}
	return r
}
