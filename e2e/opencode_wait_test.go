package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// A real `opencode serve` with "bash": "ask" runs a turn whose shell call
// needs the user's permission: agentctl asks the server (GET /permission) and
// reports the session waiting, naming the request; `wait --until waiting`
// returns within 1 s of the request appearing; once approved through the
// server, the command runs and the session is no longer waiting.
func TestOpenCodeServePermissionWaiting(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	o := harness.NewOpenCode(t, srv)
	o.AskBeforeBash(t)
	dir := harness.WorkDir(t, "frontend")
	oc := startOCServe(t, o, dir, "opencode-serve")
	oc.waitHealthy(90 * time.Second)
	var sess struct {
		ID string `json:"id"`
	}
	oc.post("/session", `{}`, &sess)
	a := harness.NewAgentctl(t, o.Home)
	oc.post("/session/"+sess.ID+"/prompt_async",
		`{"model":{"providerID":"fake","modelID":"fake-model"},"parts":[{"type":"text","text":"TOOLCMD: touch opencode-made-this"}]}`, nil)
	// The turn is open once the server says the session is busy: agentctl must
	// say running on the server's word, and a wait started now has a live
	// session to wait on.
	eventually(t, 120*time.Second, func() (bool, string) {
		s := a.Status(t, sess.ID)
		return (s.Status == "running" || s.Status == "waiting") && s.Evidence == "server", s.Status + " " + s.Evidence + " " + s.EvidenceDetail
	})
	waited := startWait(t, a, sess.ID, "waiting")

	// Ground truth: the moment the server lists the request.
	var reqID string
	deadline := time.Now().Add(180 * time.Second) // minutes under load: the model call and tool start are slow
	for reqID == "" {
		var reqs []struct {
			ID        string `json:"id"`
			SessionID string `json:"sessionID"`
		}
		oc.get("/permission", &reqs)
		for _, r := range reqs {
			if r.SessionID == sess.ID {
				reqID = r.ID
			}
		}
		if time.Now().After(deadline) {
			var msgs, status any
			oc.get("/session/"+sess.ID+"/message", &msgs)
			oc.get("/session/status", &status)
			t.Fatalf("no permission request within 180 s; status %v; messages %v", status, msgs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	asked := time.Now()
	var w waitResult
	select {
	case w = <-waited:
	case <-time.After(30 * time.Second):
		t.Fatal("wait --until waiting did not return within 30 s of the permission request")
	}
	var line struct {
		Reached        string `json:"reached"`
		Evidence       string `json:"evidence"`
		EvidenceDetail string `json:"evidence_detail"`
	}
	if err := json.Unmarshal([]byte(w.out), &line); err != nil || w.code != 0 || line.Reached != "waiting" {
		t.Fatalf("wait --until waiting: exit %d, %q (%v); want exit 0, reached waiting", w.code, w.out, err)
	}
	if lat := w.after.Sub(asked); lat > time.Second {
		t.Errorf("wait --until waiting returned %s after the permission request; want within 1 s", lat)
	} else {
		t.Logf("wait --until waiting returned %s after the permission request", lat.Round(time.Millisecond))
	}
	if line.Evidence != "server" || !strings.Contains(line.EvidenceDetail, reqID) || !strings.Contains(line.EvidenceDetail, "touch opencode-made-this") {
		t.Errorf("evidence %s %q; want server naming %s and the command", line.Evidence, line.EvidenceDetail, reqID)
	}

	// Approve it the way the TUI does; the command runs and the wait is over.
	oc.post("/permission/"+reqID+"/reply", `{"reply":"once"}`, nil)
	eventually(t, 60*time.Second, func() (bool, string) {
		s := a.Status(t, sess.ID)
		return s.Status != "waiting" && exists(filepath.Join(dir, "opencode-made-this")), s.Status + " " + s.EvidenceDetail
	})
}

type ocServer struct {
	t    *testing.T
	base string
}

// startOCServe starts `opencode serve` of o in dir on a free loopback port
// (named name among the test's processes) and returns its API; waitHealthy
// waits for it to answer.
func startOCServe(t *testing.T, o *harness.OpenCode, dir, name string) ocServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	harness.Start(t, harness.Spec{Path: o.Bin, Args: []string{"serve", "--hostname", "127.0.0.1", "--port", fmt.Sprint(port)},
		Dir: dir, Env: o.Env.With("PWD", dir), Name: name})
	return ocServer{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
}

// waitHealthy waits up to limit for GET /global/health (slow to start on a
// loaded machine).
func (o ocServer) waitHealthy(limit time.Duration) {
	o.t.Helper()
	deadline := time.Now().Add(limit)
	for !o.healthy() {
		if time.Now().After(deadline) {
			o.t.Fatalf("opencode serve %s did not answer /global/health within %s", o.base, limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// newSession creates a session and starts its first turn with prompt on the
// fake model; it returns the session's id.
func (o ocServer) newSession(prompt string) string {
	o.t.Helper()
	var sess struct {
		ID string `json:"id"`
	}
	o.post("/session", `{}`, &sess)
	b, _ := json.Marshal(prompt)
	o.post("/session/"+sess.ID+"/prompt_async",
		`{"model":{"providerID":"fake","modelID":"fake-model"},"parts":[{"type":"text","text":`+string(b)+`}]}`, nil)
	return sess.ID
}

func (o ocServer) healthy() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, o.base+"/global/health", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (o ocServer) get(path string, v any) {
	o.t.Helper()
	resp, err := http.Get(o.base + path)
	if err != nil {
		o.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		o.t.Fatalf("GET %s: %s: %v", path, resp.Status, err)
	}
}

func (o ocServer) post(path, body string, v any) {
	o.t.Helper()
	resp, err := http.Post(o.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		o.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		o.t.Fatalf("POST %s: %s", path, resp.Status)
	}
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			o.t.Fatalf("POST %s: %v", path, err)
		}
	}
}

// eventually polls ok every 200 ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		done, last := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s; last: %s", d, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
