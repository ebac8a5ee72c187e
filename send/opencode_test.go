package send

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover/opencode"
)

// fakeOpenCode answers as an opencode server that hosts session ses_1 in /w/app.
type fakeOpenCode struct {
	mu     sync.Mutex
	busy   bool
	asks   bool
	posted []string // "path?query body"
}

func (f *fakeOpenCode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Query().Get("directory") != "/w/app" {
		http.NotFound(w, r)
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/session/ses_1":
		io.WriteString(w, `{"id":"ses_1","directory":"/w/app"}`)
	case r.Method == http.MethodGet && r.URL.Path == "/session/status":
		if f.busy {
			io.WriteString(w, `{"ses_1":{"type":"busy"}}`)
		} else {
			io.WriteString(w, `{}`)
		}
	case r.Method == http.MethodGet && r.URL.Path == "/permission":
		if f.asks {
			io.WriteString(w, `[{"id":"per_9","sessionID":"ses_1"}]`)
		} else {
			io.WriteString(w, `[]`)
		}
	case r.Method == http.MethodGet && r.URL.Path == "/question":
		io.WriteString(w, `[]`)
	case r.Method == http.MethodPost && r.URL.Path == "/session/ses_1/prompt_async":
		b, _ := io.ReadAll(r.Body)
		f.posted = append(f.posted, r.URL.Path+"?"+r.URL.RawQuery+" "+string(b))
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func TestFindOpenCode(t *testing.T) {
	f := &fakeOpenCode{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	servers := []opencode.Server{{PID: 7, Addrs: []string{"127.0.0.1:1", addr}}}
	ctx := context.Background()

	h, err := FindOpenCode(ctx, OpenCodeClient(StatusTimeout), servers, "ses_1", "/w/app")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(OpenCodeHost{PID: 7, Base: srv.URL, Dir: "/w/app"}, h); diff != "" {
		t.Errorf("idle host (-want +got):\n%s", diff)
	}
	f.busy, f.asks = true, true
	h, _ = FindOpenCode(ctx, OpenCodeClient(StatusTimeout), servers, "ses_1", "/w/app")
	if h.Busy != "busy" || h.Asks != "permission per_9" {
		t.Errorf("busy asking host: %+v, want busy and permission per_9", h)
	}
	for _, c := range []struct{ id, dir string }{{"ses_2", "/w/app"}, {"ses_1", "/elsewhere"}} {
		if _, err := FindOpenCode(ctx, OpenCodeClient(StatusTimeout), servers, c.id, c.dir); !errors.Is(err, ErrNoServer) {
			t.Errorf("%s in %s: err %v, want ErrNoServer", c.id, c.dir, err)
		}
	}
}

// A server that does not answer in time is named, not taken for one that
// does not host the session (which would send the user to tmux).
func TestFindOpenCodeNamesASilentServer(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	}))
	defer slow.Close()
	servers := []opencode.Server{{PID: 9, Addrs: []string{strings.TrimPrefix(slow.URL, "http://")}}}
	_, err := FindOpenCode(context.Background(), OpenCodeClient(100*time.Millisecond), servers, "ses_1", "/w/app")
	if err == nil || errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), "(pid 9) did not answer") {
		t.Errorf("err = %v; want the silent server named, not ErrNoServer", err)
	}
}

func TestPromptOpenCodePutsTheMessageInTheBody(t *testing.T) {
	f := &fakeOpenCode{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	h := OpenCodeHost{PID: 7, Base: srv.URL, Dir: "/w/app"}
	const msg = "add tests\nfor \"quoted\" things"
	if err := PromptOpenCode(context.Background(), OpenCodeClient(StatusTimeout), h, "ses_1", "fake/fake-model", msg); err != nil {
		t.Fatal(err)
	}
	if len(f.posted) != 1 {
		t.Fatalf("posted %q, want one prompt", f.posted)
	}
	where, body, _ := strings.Cut(f.posted[0], " ")
	if where != "/session/ses_1/prompt_async?directory=%2Fw%2Fapp" {
		t.Errorf("posted to %s", where)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"parts": []any{map[string]any{"type": "text", "text": msg}},
		"model": map[string]any{"providerID": "fake", "modelID": "fake-model"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	if err := PromptOpenCode(context.Background(), OpenCodeClient(StatusTimeout), h, "ses_2", "", msg); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("prompt to an unknown session: err %v, want the server's 404", err)
	}
}
