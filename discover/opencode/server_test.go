package opencode

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
)

// The shapes `opencode serve` 1.18.33 answered while a bash call waited on the
// user (recorded by TestOpenCodeServePermissionWaiting's probe).
const (
	recordedPermission = `[{"id":"per_21190f2af0010cmtP363DXk2su","sessionID":"ses_dee7004cdffeKGZBs4CdpS1sSD","permission":"bash","patterns":["touch made-this"],"metadata":{"command":"touch made-this"},"always":["touch *"],"tool":{"messageID":"msg_2119067570016nAwxJ2QjzGJCN","callID":"call_de9f0954000002"}}]`
	recordedStatus     = `{"ses_dee7004cdffeKGZBs4CdpS1sSD":{"type":"busy"},"ses_other":{"type":"retry","attempt":2,"message":"overloaded"}}`
)

func fakeServer(t *testing.T, dirs *[]string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*dirs = append(*dirs, r.URL.Query().Get("directory"))
		switch r.URL.Path {
		case "/global/health":
			w.Write([]byte(`{"healthy":true,"version":"1.18.33"}`))
		case "/session/status":
			w.Write([]byte(recordedStatus))
		case "/permission":
			w.Write([]byte(recordedPermission))
		case "/question":
			w.Write([]byte(`[]`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestAskServers(t *testing.T) {
	var dirs []string
	addr := fakeServer(t, &dirs)
	old := listenAddrs
	listenAddrs = func(pid int) []string {
		if pid == 7 {
			return []string{addr}
		}
		return nil
	}
	t.Cleanup(func() { listenAddrs = old })
	procs := []ocProc{{PID: 7, Kind: kindHost}, {PID: 8, Kind: kindRun}}
	got, silent, _ := askServers(context.Background(), procs, []string{"/home/dev/frontend"})
	if len(silent) != 0 {
		t.Errorf("silent servers: %v", silent)
	}

	w, ok := serverVerdict(got["ses_dee7004cdffeKGZBs4CdpS1sSD"], true, "assistant message open")
	if !ok || w.Status != discover.StatusWaiting || w.Evidence != discover.EvidenceServer || w.PID != 7 || w.Inferred {
		t.Fatalf("waiting session: %+v ok=%v", w, ok)
	}
	for _, want := range []string{"per_21190f2af0010cmtP363DXk2su", `bash "touch made-this"`, "call_de9f0954000002", "GET /permission", addr} {
		if !strings.Contains(w.Detail, want) {
			t.Errorf("detail %q lacks %q", w.Detail, want)
		}
	}
	if r, ok := serverVerdict(got["ses_other"], true, "open"); !ok || r.Status != discover.StatusRunning || !strings.Contains(r.Detail, "retrying") {
		t.Errorf("retrying session: %+v", r)
	}
	if _, ok := serverVerdict(got["ses_unknown"], false, ""); ok {
		t.Error("a session no server knows got a server verdict")
	}
	for _, d := range dirs[1:] { // after /global/health, every request names the project
		if d != "/home/dev/frontend" {
			t.Errorf("request for directory %q, want /home/dev/frontend", d)
		}
	}
}

// A server that passes its health check but does not answer /session/status
// in time is named, so that the unknown it leaves says why.
func TestAskServersSilent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/global/health" {
			w.Write([]byte(`{"healthy":true,"version":"1.18.33"}`))
			return
		}
		select { // busy starting a turn
		case <-r.Context().Done():
		case <-time.After(2 * serverTimeout):
		}
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	old := listenAddrs
	listenAddrs = func(int) []string { return []string{addr} }
	t.Cleanup(func() { listenAddrs = old })
	got, silent, _ := askServers(context.Background(), []ocProc{{PID: 7, Kind: kindHost}}, []string{"/home/dev/frontend"})
	if len(got) != 0 || len(silent) != 1 || !strings.Contains(silent[7], "opencode server "+addr+" (pid 7) did not answer") {
		t.Errorf("got %v, silent %v; want nothing, one silent server naming %s", got, silent, addr)
	}
}

// A listener that does not answer the health check in time is named too (an
// opencode server busy starting a turn); one that refuses is not a server.
func TestAskServersHealthTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * serverTimeout):
		}
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	old := listenAddrs
	listenAddrs = func(int) []string { return []string{addr, "127.0.0.1:1"} }
	t.Cleanup(func() { listenAddrs = old })
	_, silent, _ := askServers(context.Background(), []ocProc{{PID: 7, Kind: kindHost}}, []string{"/home/dev/frontend"})
	if len(silent) != 1 || !strings.Contains(silent[7], addr) {
		t.Errorf("silent %v; want only %s", silent, addr)
	}
}

// A server too busy to answer even its health check (recorded e2e: opencode
// serve 1.18.33 starting a turn on a loaded machine), the one candidate of the
// one open session prompted since it started: running, inferred, naming it.
// A server that could run several open sessions leaves them unknown, saying
// why.
func TestBusyServerRunsItsOnlyOpenSession(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * serverTimeout):
		}
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	old := listenAddrs
	listenAddrs = func(pid int) []string { return []string{addr} }
	t.Cleanup(func() { listenAddrs = old })
	home := testdata(t, "home")
	serve := func(start int64) fakeProc {
		return fakeProc{pid: 800, ppid: 1, comm: "opencode", argv: []string{"opencode", "serve", "--port", "4096"},
			cwd: "/home/dev/frontend", env: []string{"PWD=/home/dev/frontend"}, startMS: start}
	}

	got, _ := list(t, newEnv(home, nil, table(serve(1795211624000))))
	s := got[sesListener]
	if s.Status != discover.StatusRunning || !s.Inferred || s.PID != 800 || !strings.Contains(s.EvidenceDetail, "(pid 800) did not answer") ||
		!strings.Contains(s.EvidenceDetail, "the only open session it could run") {
		t.Errorf("the busy server's one open session: %s inferred=%v pid %d (%s); want running, inferred, pid 800", s.Status, s.Inferred, s.PID, s.EvidenceDetail)
	}

	got, _ = list(t, newEnv(home, nil, table(serve(1795211000000))))
	for _, id := range []string{sesListener, sesEarly, sesTERM} {
		if s := got[id]; s.Status != discover.StatusUnknown || !strings.Contains(s.EvidenceDetail, "(pid 800) did not answer") {
			t.Errorf("%s with a busy server that could run 3 open sessions: %s (%s); want unknown naming it", id, s.Status, s.EvidenceDetail)
		}
	}
}

// A fake `opencode serve` answering with the files recorded in dir/server
// (status names the /session/status file).
func recordedServer(t *testing.T, dir, status string) string {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, "server", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	answers := map[string][]byte{
		"/global/health":  []byte(`{"healthy":true,"version":"1.18.33"}`),
		"/session/status": read(status),
		"/permission":     read("permission.json"),
		"/question":       read("question.json"),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := answers[r.URL.Path]; ok {
			w.Write(b)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// Recorded (testdata/server-prompt-not-busy): OpenCode has written the prompt
// but its runner has not marked the session busy yet, so the one server that
// could run it answers that nothing is busy. That server's answer is the
// status: idle, not an unknown about which process runs it. Once it lists the
// session busy (recorded a moment later), running. A process that cannot be
// asked (a TUI without --port) keeps the inference.
func TestServerNotBusyWithAPrompt(t *testing.T) {
	const ses = "ses_ded2f2bccffe2T7hS8w1zYmMNe"
	home := testdata(t, "server-prompt-not-busy")
	const dir = "/tmp/TestZZRecordPromptNotBusy1943146348/002/rec"
	addrs := map[int]string{}
	old := listenAddrs
	listenAddrs = func(pid int) []string {
		if a, ok := addrs[pid]; ok {
			return []string{a}
		}
		return nil
	}
	t.Cleanup(func() { listenAddrs = old })
	serve := fakeProc{pid: 900, ppid: 1, comm: "opencode", argv: []string{"opencode", "serve", "--port", "4096"},
		cwd: dir, env: []string{"PWD=" + dir}, startMS: 1795612000000}

	addrs[900] = recordedServer(t, home, "session-status.json")
	got, _ := list(t, newEnv(home, nil, table(serve)))
	s := got[ses]
	if s.Status != discover.StatusIdle || s.Evidence != discover.EvidenceServer || s.PID != 900 || s.Inferred ||
		!strings.Contains(s.EvidenceDetail, "(pid 900): not busy in "+dir) || !strings.Contains(s.EvidenceDetail, "user message with no reply yet") {
		t.Errorf("prompt written, server not busy yet: %s/%s pid %d inferred=%v (%s); want idle from the server, pid 900", s.Status, s.Evidence, s.PID, s.Inferred, s.EvidenceDetail)
	}

	addrs[900] = recordedServer(t, home, "session-status-later.json")
	got, _ = list(t, newEnv(home, nil, table(serve)))
	if s := got[ses]; s.Status != discover.StatusRunning || s.Evidence != discover.EvidenceServer {
		t.Errorf("server lists it busy: %s/%s (%s); want running from the server", s.Status, s.Evidence, s.EvidenceDetail)
	}

	// A second candidate that cannot be asked: the server's word is not the
	// whole story.
	addrs[900] = recordedServer(t, home, "session-status.json")
	tui := fakeProc{pid: 901, ppid: 1, comm: "opencode", argv: []string{"opencode"}, cwd: dir, env: []string{"PWD=" + dir}, startMS: 1795612001000}
	got, _ = list(t, newEnv(home, nil, table(serve, tui)))
	if s := got[ses]; s.Status != discover.StatusUnknown {
		t.Errorf("server not busy and a TUI without API: %s/%s (%s); want unknown", s.Status, s.Evidence, s.EvidenceDetail)
	}
	// The TUI alone: inferred from the process, as before.
	delete(addrs, 900)
	got, _ = list(t, newEnv(home, nil, table(tui)))
	if s := got[ses]; s.Status != discover.StatusRunning || !s.Inferred || s.PID != 901 {
		t.Errorf("a TUI without API alone: %s/%s pid %d (%s); want running, inferred", s.Status, s.Evidence, s.PID, s.EvidenceDetail)
	}
}
