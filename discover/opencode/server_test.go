package opencode

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
	got := askServers(context.Background(), procs, []string{"/home/dev/frontend"})

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
