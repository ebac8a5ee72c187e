package send

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// openCodeTimeout bounds each request to a server.
const openCodeTimeout = 2 * time.Second

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
func OpenCodeClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	return &http.Client{Timeout: openCodeTimeout, Transport: tr}
}

// FindOpenCode asks each server, on each address it listens on, whether it
// knows session id (GET /session/<id> for the session's directory), and the
// first that does says whether it is busy or asks the user something.
func FindOpenCode(ctx context.Context, client *http.Client, servers []opencode.Server, id, dir string) (OpenCodeHost, error) {
	q := "?directory=" + url.QueryEscape(dir)
	for _, s := range servers {
		for _, addr := range s.Addrs {
			base := "http://" + addr
			var sess struct {
				ID string `json:"id"`
			}
			if err := getJSON(ctx, client, base+"/session/"+url.PathEscape(id)+q, &sess); err != nil || sess.ID != id {
				continue
			}
			h := OpenCodeHost{PID: s.PID, Base: base, Dir: dir}
			var status map[string]struct {
				Type string `json:"type"`
			}
			if err := getJSON(ctx, client, base+"/session/status"+q, &status); err != nil {
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
				if getJSON(ctx, client, base+path+q, &reqs) != nil {
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

func getJSON(ctx context.Context, client *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", u, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(v)
}
