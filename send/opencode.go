package send

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover/opencode"
)

// OpenCode's own channel (docs/agents/opencode.md "Send"): a live `opencode
// serve`/`web`, or a TUI started with --port, hosts its sessions over a
// loopback HTTP API. POST /session/<id>/prompt_async starts a turn with the
// message in the request body and answers at once; the store then records it.

// Each request to a server is bounded: StatusTimeout where a status only
// reports whether a session can take a message, SendTimeout where send waits
// for the answer (a node server on a loaded machine can take seconds).
const (
	StatusTimeout = 5 * time.Second
	SendTimeout   = 15 * time.Second
)

// OpenCodeHost is the server that knows a session, and what it says of it.
type OpenCodeHost struct {
	PID  int
	Base string // http://host:port
	Dir  string // the session's directory, as every request names it
	Busy string // "busy" or "retry" while a turn runs; "" when idle
	Asks string // a pending permission or question, "" when none
}

// ErrNoServer: no live opencode server knows the session.
var ErrNoServer = errors.New("no live opencode server knows this session")

// OpenCodeClient is the HTTP client for loopback servers: no proxy (a proxy
// variable must not send a local request elsewhere), short timeouts.
func OpenCodeClient(timeout time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	return &http.Client{Timeout: timeout, Transport: tr}
}

// FindOpenCode asks each server, on each address it listens on, whether it
// knows session id (GET /session/<id> for the session's directory), and the
// first that does says whether it is busy or asks the user something. When
// none knows it and one did not answer in time, the error says so (it may be
// that one): ErrNoServer only when no server that listens left it unsaid.
func FindOpenCode(ctx context.Context, client *http.Client, servers []opencode.Server, id, dir string) (OpenCodeHost, error) {
	q := "?directory=" + url.QueryEscape(dir)
	var silent error
	for _, s := range servers {
		for _, addr := range s.Addrs {
			base := "http://" + addr
			var sess struct {
				ID string `json:"id"`
			}
			if err := opencode.GetJSON(ctx, client, base+"/session/"+url.PathEscape(id)+q, &sess); err != nil || sess.ID != id {
				var ne net.Error
				if err != nil && errors.As(err, &ne) && ne.Timeout() && silent == nil {
					silent = fmt.Errorf("opencode server %s (pid %d) did not answer whether it hosts %s: %w; try again", addr, s.PID, id, err)
				}
				continue
			}
			h := OpenCodeHost{PID: s.PID, Base: base, Dir: dir}
			var status map[string]struct {
				Type string `json:"type"`
			}
			if err := opencode.GetJSON(ctx, client, base+"/session/status"+q, &status); err != nil {
				return h, fmt.Errorf("opencode server %s (pid %d) knows %s but did not say whether it is busy: %w", addr, s.PID, id, err)
			}
			if st, ok := status[id]; ok && st.Type != "idle" {
				h.Busy = st.Type
			}
			for _, path := range []string{"/permission", "/question"} {
				var reqs []struct {
					ID        string `json:"id"`
					SessionID string `json:"sessionID"`
				}
				if opencode.GetJSON(ctx, client, base+path+q, &reqs) != nil {
					continue
				}
				for _, r := range reqs {
					if r.SessionID == id && h.Asks == "" {
						h.Asks = strings.TrimPrefix(path, "/") + " " + r.ID
					}
				}
			}
			return h, nil
		}
	}
	if silent != nil {
		return OpenCodeHost{}, silent
	}
	return OpenCodeHost{}, ErrNoServer
}

// PromptOpenCode starts a turn of session id with msg, in the request body
// (POST /session/<id>/prompt_async). model is the session's "provider/model",
// sent along so the turn runs on the session's model ("" leaves it to
// OpenCode).
func PromptOpenCode(ctx context.Context, client *http.Client, h OpenCodeHost, id, model, msg string) error {
	body := map[string]any{"parts": []map[string]string{{"type": "text", "text": msg}}}
	if p, m, ok := strings.Cut(model, "/"); ok && p != "" && m != "" {
		body["model"] = map[string]string{"providerID": p, "modelID": m}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	u := h.Base + "/session/" + url.PathEscape(id) + "/prompt_async?directory=" + url.QueryEscape(h.Dir)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s/session/%s/prompt_async: %w", h.Base, id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Errorf("POST %s/session/%s/prompt_async: %s %s", h.Base, id, resp.Status, trimLine(string(msg)))
	}
	return nil
}
