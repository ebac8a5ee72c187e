package opencode

import (
	"context"
	"net/http"
	"net/http/httptest"
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
	got, silent := askServers(context.Background(), procs, []string{"/home/dev/frontend"})
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
	got, silent := askServers(context.Background(), []ocProc{{PID: 7, Kind: kindHost}}, []string{"/home/dev/frontend"})
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
	_, silent := askServers(context.Background(), []ocProc{{PID: 7, Kind: kindHost}}, []string{"/home/dev/frontend"})
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
