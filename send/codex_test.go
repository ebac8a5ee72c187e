package send

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

const codexThread = "01a23580-de04-7761-86de-09ba72e5c258"

// fakeCodexd answers as the TUI's app-server daemon on a unix socket: a
// WebSocket at /rpc, one JSON-RPC object a message. It hosts codexThread in
// the state status (a ThreadStatus object) and records every request.
type fakeCodexd struct {
	mu       sync.Mutex
	status   string // thread/read's thread.status
	loaded   bool
	paged    bool  // thread/loaded/list answers in two pages
	queues   []int // thread/queue/list's count at each call (the last one repeats)
	requests []map[string]any
	path     string
}

// codexdState is what a fakeCodexd answers.
type codexdState struct {
	status        string
	loaded, paged bool
	queues        []int
}

func newFakeCodexd(st codexdState) *fakeCodexd {
	return &fakeCodexd{status: st.status, loaded: st.loaded, paged: st.paged, queues: st.queues}
}

func startFakeCodexd(t *testing.T, f *fakeCodexd) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cxd") // unix socket paths are short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return sock
}

func (f *fakeCodexd) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.path = r.URL.Path
	f.mu.Unlock()
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := r.Context()
	send := func(s string) { _ = c.Write(ctx, websocket.MessageText, []byte(s)) }
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		var m map[string]any
		if json.Unmarshal(b, &m) != nil {
			return
		}
		f.mu.Lock()
		f.requests = append(f.requests, m)
		status, loaded, paged := f.status, f.loaded, f.paged
		queued := 0
		if m["method"] == "thread/queue/list" && len(f.queues) > 0 {
			queued = f.queues[0]
			if len(f.queues) > 1 {
				f.queues = f.queues[1:]
			}
		}
		f.mu.Unlock()
		id, _ := json.Marshal(m["id"])
		params, _ := m["params"].(map[string]any)
		// Notifications come before answers, as the daemon sends them.
		send(`{"method":"configWarning","params":{"summary":"x"}}`)
		switch m["method"] {
		case "initialize":
			send(`{"id":` + string(id) + `,"result":{"userAgent":"codex-tui/0.171.0","codexHome":"/h/.codex"}}`)
		case "thread/loaded/list":
			data := `[]`
			if loaded {
				data = `["` + codexThread + `"]`
			}
			switch {
			case paged && params["cursor"] == nil:
				send(`{"id":` + string(id) + `,"result":{"data":["01a23580-0000-7000-8000-000000000000"],"nextCursor":"c2"}}`)
			default:
				send(`{"id":` + string(id) + `,"result":{"data":` + data + `,"nextCursor":null}}`)
			}
		case "thread/read":
			if params["threadId"] != codexThread {
				send(`{"id":` + string(id) + `,"error":{"code":-32600,"message":"thread not loaded"}}`)
				continue
			}
			send(`{"id":` + string(id) + `,"result":{"thread":{"id":"` + codexThread + `","status":` + status + `}}}`)
		case "thread/queue/list":
			items := make([]string, queued)
			for i := range items {
				items[i] = `{"id":"q` + strconv.Itoa(i) + `","input":[],"clientUserMessageId":"c"}`
			}
			send(`{"id":` + string(id) + `,"result":{"data":[` + strings.Join(items, ",") + `],"nextCursor":null}}`)
		case "thread/queue/add":
			send(`{"id":` + string(id) + `,"result":{"queuedSubmission":{"id":"01a23582-e9e5-7e70-8681-f8d739c1a751","clientUserMessageId":"x","input":[]}}}`)
		}
	}
}

func TestFindCodexStatus(t *testing.T) {
	idle := `{"type":"idle"}`
	for _, tc := range []struct {
		name   string
		st     codexdState
		want   string
		queued int
		wantEr error
	}{
		{"idle", codexdState{status: idle, loaded: true}, discover.StatusIdle, 0, nil},
		{"idle, the loaded list in two pages", codexdState{status: idle, loaded: true, paged: true}, discover.StatusIdle, 0, nil},
		{"a turn runs", codexdState{status: `{"type":"active","activeFlags":[]}`, loaded: true}, discover.StatusRunning, 0, nil},
		{"a turn runs, messages queued behind it", codexdState{status: `{"type":"active","activeFlags":[]}`, loaded: true, queues: []int{2}}, discover.StatusRunning, 2, nil},
		{"an approval prompt", codexdState{status: `{"type":"active","activeFlags":["waitingOnApproval"]}`, loaded: true}, discover.StatusWaiting, 0, nil},
		{"a system error", codexdState{status: `{"type":"systemError"}`, loaded: true}, discover.StatusUnknown, 0, nil},
		{"not loaded (an exec run's thread, a thread the daemon let go)", codexdState{status: `{"type":"notLoaded"}`}, "", 0, ErrNotHosted},
		{"loaded but read says notLoaded", codexdState{status: `{"type":"notLoaded"}`, loaded: true}, "", 0, ErrNotHosted},
		// between two queued turns: idle with a queue for a moment
		{"idle with a queue that starts", codexdState{status: idle, loaded: true, queues: []int{1, 0}}, discover.StatusIdle, 0, nil},
		{"idle with a queue that stays", codexdState{status: idle, loaded: true, queues: []int{2}}, discover.StatusIdle, 2, ErrQueueStalled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCodexd(tc.st)
			sock := startFakeCodexd(t, f)
			h, err := FindCodex(context.Background(), sock, 42, codexThread)
			if !errors.Is(err, tc.wantEr) {
				t.Fatalf("err %v, want %v", err, tc.wantEr)
			}
			if tc.wantEr == nil || tc.wantEr == ErrQueueStalled {
				if h.Status != tc.want || h.Queued != tc.queued || h.PID != 42 || h.Socket != sock {
					t.Errorf("host %+v, want status %s, %d queued, pid 42, socket %s", h, tc.want, tc.queued, sock)
				}
			}
			if f.path != "/rpc" {
				t.Errorf("websocket path %q, want /rpc (codex queue's own)", f.path)
			}
		})
	}
}

// QueueCodex sends the request `codex queue` 0.171.0 itself sent to its
// daemon (testdata/codex-queue-0.171.0.jsonl, the frames read off the socket
// with strace): initialize with the experimental API, initialized, then
// thread/queue/add with the message in the body.
func TestQueueCodexSendsWhatCodexQueueSends(t *testing.T) {
	b, err := os.ReadFile("testdata/codex-queue-0.171.0.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var recorded []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		recorded = append(recorded, m)
	}
	if len(recorded) != 3 {
		t.Fatalf("%d recorded frames, want 3", len(recorded))
	}
	want := recorded[2]["params"].(map[string]any)
	msg := want["input"].([]any)[0].(map[string]any)["text"].(string)

	f := newFakeCodexd(codexdState{status: `{"type":"idle"}`, loaded: true})
	sock := startFakeCodexd(t, f)
	qid, err := QueueCodex(context.Background(), sock, codexThread, msg)
	if err != nil {
		t.Fatal(err)
	}
	if qid != "01a23582-e9e5-7e70-8681-f8d739c1a751" {
		t.Errorf("queued id %q", qid)
	}
	var methods []string
	for _, r := range f.requests {
		methods = append(methods, r["method"].(string))
	}
	if diff := cmp.Diff([]string{"initialize", "initialized", "thread/queue/add"}, methods); diff != "" {
		t.Fatalf("methods (-want +got):\n%s", diff)
	}
	if got := f.requests[0]["params"].(map[string]any)["capabilities"].(map[string]any)["experimentalApi"]; got != recorded[0]["params"].(map[string]any)["capabilities"].(map[string]any)["experimentalApi"] {
		t.Errorf("initialize: experimentalApi %v, want codex queue's", got)
	}
	got := f.requests[2]["params"].(map[string]any)
	// The client's message id is fresh each time (a UUIDv7, as Codex's own).
	cid, _ := got["clientUserMessageId"].(string)
	if u, err := uuid.Parse(cid); err != nil || u.Version() != 7 {
		t.Errorf("clientUserMessageId %q: want a UUIDv7", cid)
	}
	got["clientUserMessageId"], want["clientUserMessageId"] = "", ""
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("thread/queue/add params (-codex queue's +agentctl's):\n%s", diff)
	}
}

// A socket in a directory others can write to may be anyone's: nothing is
// sent there (the message would go to whoever listens).
func TestQueueCodexRefusesASocketOthersCouldPlace(t *testing.T) {
	f := &fakeCodexd{}
	sock := startFakeCodexd(t, f)
	if err := os.Chmod(filepath.Dir(sock), 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := QueueCodex(context.Background(), sock, codexThread, "hi")
	if err == nil || !strings.Contains(err.Error(), "not this user's alone") {
		t.Fatalf("err %v, want a refusal naming the directory", err)
	}
	f.mu.Lock()
	if n := len(f.requests); n != 0 {
		t.Errorf("%d requests reached the socket, want none", n)
	}
	f.mu.Unlock()
	link := filepath.Join(t.TempDir(), "link.sock")
	if err := os.Symlink(filepath.Join(filepath.Dir(sock), "missing"), link); err != nil {
		t.Fatal(err)
	}
	if _, err := QueueCodex(context.Background(), link, codexThread, "hi"); err == nil {
		t.Fatal("a link to nothing was dialled")
	}
}

func TestQueueCodexNoDaemon(t *testing.T) {
	_, err := QueueCodex(context.Background(), filepath.Join(t.TempDir(), "none.sock"), codexThread, "hi")
	if err == nil || !strings.Contains(err.Error(), "connect to the codex app-server") {
		t.Fatalf("err %v, want one naming the connection", err)
	}
}

func TestCodexListen(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		path string
		ok   bool
	}{
		// the TUI's managed daemon (ps, 0.171.0)
		{[]string{"/h/.codex/packages/app-server-daemon/releases/0.171.0-x86_64-unknown-linux-musl/bin/codex", "app-server", "--listen", "unix://", "--analytics-default-enabled", "--managed-daemon"}, "", true},
		{[]string{"codex", "app-server", "--listen=unix:///run/cx.sock"}, "/run/cx.sock", true},
		{[]string{"codex", "app-server"}, "", false}, // stdio: only its parent talks to it
		{[]string{"codex", "app-server", "--listen", "ws://127.0.0.1:4500"}, "", false},
		{[]string{"codex", "app-server", "daemon", "pid-update-loop"}, "", false},
		{[]string{"codex", "exec", "--json", "--listen", "unix://"}, "", false},
		{[]string{"codex", "--listen", "unix://", "app-server"}, "", false},
	} {
		path, ok := CodexListen(tc.argv)
		if path != tc.path || ok != tc.ok {
			t.Errorf("CodexListen(%q) = %q, %v; want %q, %v", tc.argv, path, ok, tc.path, tc.ok)
		}
	}
}

func TestCanSendCodex(t *testing.T) {
	tab := &proc.Fake{
		Procs: []proc.Process{{PID: 1}, {PID: 300, PPID: 1}, {PID: 310, PPID: 1}, {PID: 320, PPID: 1}},
		Args: map[int][]string{
			300: {"codex", "app-server", "--listen", "unix://", "--managed-daemon"},
			310: {"codex", "app-server"},
			320: {"codex", "exec", "--json", "-"},
		},
		Envs: map[int][]string{300: {"TMUX=/tmp/tmux-0/default,1,0", "TMUX_PANE=%1"}},
	}
	for _, tc := range []struct {
		name string
		s    discover.Session
		want string
	}{
		// The daemon inherited the TUI's pane variables: its queue comes first.
		{"held by the TUI's daemon", discover.Session{Adapter: "codex", Status: "idle", PID: 300}, ViaCodexServer},
		{"held by an app-server on stdio", discover.Session{Adapter: "codex", Status: "idle", PID: 310}, ""},
		{"an exec run", discover.Session{Adapter: "codex", Status: "running", PID: 320}, ""},
		{"ended", discover.Session{Adapter: "codex", Status: "stopped", PID: 300}, ""},
		{"another agent's process with that argv", discover.Session{Adapter: "pi", Status: "idle", PID: 300}, ViaTmux},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			if got := CanSend(tab, &s); got != tc.want {
				t.Errorf("CanSend = %q, want %q", got, tc.want)
			}
		})
	}
	sock, ok := CodexSocketFor(tab, "/h/.codex", &discover.Session{Adapter: "codex", Status: "idle", PID: 300})
	if !ok || sock != "/h/.codex/app-server-control/app-server-control.sock" {
		t.Errorf("CodexSocketFor = %q, %v", sock, ok)
	}
}
