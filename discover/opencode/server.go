package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
)

// A live `opencode serve`/`web` or TUI is asked over its own HTTP API which of
// its sessions are busy and which wait on the user (docs/agents/opencode.md
// §4.1 (2), §4.3): a permission request (`GET /permission`) or a question-tool
// request (`GET /question`) exists only there, never in the store.

// serverTimeout bounds each request to a local server: one that does not answer
// at once is left out, never waited for.
const serverTimeout = 700 * time.Millisecond

// serverSession is what one server says about one session.
type serverSession struct {
	PID  int
	Addr string // host:port
	Busy string // "busy", "retry" or "" (idle or not its session)
	Asks string // the pending permission or question, "" when none
}

// listenAddrs returns the loopback TCP addresses a process listens on
// (platform-specific; nil when they cannot be read).
var listenAddrs = procListenAddrs

// askServers asks every server-capable opencode process that listens on
// loopback about the open sessions of dirs (each server answers per project
// directory). Sessions no server knows are absent; silent names each server
// that answered its health check but not a question (e.g. within
// serverTimeout), so that an unknown says why; answered holds each server and
// directory whose session status came back (a session of that directory it
// does not list is not running there).
func askServers(ctx context.Context, procs []ocProc, dirs []string) (out map[string]serverSession, silent map[int]string, answered map[served]string) {
	out, silent, answered = map[string]serverSession{}, map[int]string{}, map[served]string{}
	if len(dirs) == 0 {
		return out, silent, answered
	}
	client := &http.Client{Timeout: serverTimeout}
	for _, p := range procs {
		if p.Kind != kindHost && p.Kind != kindTUI {
			continue
		}
		for _, addr := range listenAddrs(p.PID) {
			if ctx.Err() != nil {
				return out, silent, answered
			}
			base := "http://" + addr
			var health struct {
				Healthy bool   `json:"healthy"`
				Version string `json:"version"`
			}
			if err := GetJSON(ctx, client, base+"/global/health", &health); err != nil || !health.Healthy {
				if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
					// An opencode server busy starting a turn can be this slow.
					silent[p.PID] = fmt.Sprintf("opencode server %s (pid %d) did not answer: %v", addr, p.PID, err)
				}
				continue // another listener of the process, or not an opencode server
			}
			for _, d := range dirs {
				if err := askDir(ctx, client, base, addr, p.PID, d, out); err != nil {
					silent[p.PID] = fmt.Sprintf("opencode server %s (pid %d) did not answer: %v", addr, p.PID, err)
				} else {
					answered[served{p.PID, d}] = addr
				}
			}
		}
	}
	return out, silent, answered
}

// served is one server process and one project directory it was asked about.
type served struct {
	PID int
	Dir string
}

type pendingRequest struct {
	ID         string          `json:"id"`
	SessionID  string          `json:"sessionID"`
	Permission string          `json:"permission"`
	Patterns   []string        `json:"patterns"`
	Questions  json.RawMessage `json:"questions"`
	Tool       struct {
		CallID string `json:"callID"`
	} `json:"tool"`
}

func askDir(ctx context.Context, client *http.Client, base, addr string, pid int, dir string, out map[string]serverSession) error {
	q := "?directory=" + url.QueryEscape(dir)
	var status map[string]struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	if err := GetJSON(ctx, client, base+"/session/status"+q, &status); err != nil {
		return err
	}
	for id, st := range status {
		s := out[id]
		s.PID, s.Addr, s.Busy = pid, addr, st.Type
		out[id] = s
	}
	for _, path := range []string{"/permission", "/question"} {
		var reqs []pendingRequest
		if GetJSON(ctx, client, base+path+q, &reqs) != nil {
			continue
		}
		for _, r := range reqs {
			if r.SessionID == "" {
				continue
			}
			s := out[r.SessionID]
			s.PID, s.Addr = pid, addr
			if s.Asks == "" {
				s.Asks = describeRequest(path, r)
			}
			out[r.SessionID] = s
		}
	}
	return nil
}

// describeRequest is the evidence detail of a pending request, naming it.
func describeRequest(path string, r pendingRequest) string {
	if path == "/question" {
		return fmt.Sprintf("question %s asks the user (GET /question)", r.ID)
	}
	pat := strings.Join(r.Patterns, " ")
	d := fmt.Sprintf("permission %s asks to run %s %q", r.ID, r.Permission, discover.OneLine(pat, 100))
	if r.Tool.CallID != "" {
		d += " (call " + r.Tool.CallID + ")"
	}
	return d + " (GET /permission)"
}

// GetJSON GETs u from a server, asking for JSON, and decodes a 200 answer of
// at most 4 MiB into v; another status is an error naming u and the status.
func GetJSON(ctx context.Context, client *http.Client, u string, v any) error {
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

// serverVerdict is the status a server's answer gives an open session, ok false
// when no server knows it.
func serverVerdict(s serverSession, ok bool, tdetail string) (discover.Verdict, bool) {
	if !ok {
		return discover.Verdict{}, false
	}
	where := fmt.Sprintf("opencode server %s (pid %d)", s.Addr, s.PID)
	switch {
	case s.Asks != "":
		return discover.Verdict{Status: discover.StatusWaiting, Evidence: discover.EvidenceServer, PID: s.PID,
			Detail: where + ": " + s.Asks}, true
	case s.Busy == "retry":
		return discover.Verdict{Status: discover.StatusRunning, Evidence: discover.EvidenceServer, PID: s.PID,
			Detail: where + ": retrying; " + tdetail}, true
	case s.Busy != "":
		return discover.Verdict{Status: discover.StatusRunning, Evidence: discover.EvidenceServer, PID: s.PID,
			Detail: where + ": " + s.Busy + "; " + tdetail}, true
	}
	return discover.Verdict{}, false
}

// busyServer is the verdict of an open session whose one candidate process is
// a server too busy to answer its own API (an opencode server starting a turn
// blocks its event loop for seconds on a loaded machine): the open turn in the
// store and the one live process that can run it are the same inference as for
// `opencode run` (docs/agents/opencode.md §4.1 (3)), provided that server is a
// candidate for no other open session. ok is false otherwise.
func busyServer(r record, recs []record, procs []ocProc, silent map[int]string, tdetail string) (discover.Verdict, bool) {
	cands := candidatesFor(r, procs)
	if len(cands) != 1 || !cands[0].StartOK || (cands[0].Kind != kindHost && cands[0].Kind != kindTUI) {
		return discover.Verdict{}, false
	}
	c := cands[0]
	msg, ok := silent[c.PID]
	if !ok {
		return discover.Verdict{}, false
	}
	for _, o := range recs {
		if o.ID == r.ID {
			continue
		}
		if turn, _ := turnOf(o.Last); turn != discover.OutcomeOpen && turn != discover.OutcomeUnknown {
			continue
		}
		for _, p := range candidatesFor(o, procs) {
			if p.PID == c.PID {
				return discover.Verdict{}, false
			}
		}
	}
	return discover.Verdict{Status: discover.StatusRunning, Evidence: discover.EvidenceProcess, Inferred: true, PID: c.PID,
		Detail: fmt.Sprintf("%s started before its latest prompt, the only open session it could run; %s (busy); %s", c, msg, tdetail)}, true
}

// notRunning is the verdict of an open session (its latest message a prompt
// with no reply, or a reply without time.completed) that every process which
// could run it — each a server started before that prompt — says it does not
// run: asked about the session's directory, none lists it busy, retrying or
// asking (GET /session/status, /permission, /question). The server's answer
// outranks the store: OpenCode writes the prompt before its runner marks the
// session busy (1–2 s on a loaded machine, recorded in
// testdata/server-prompt-not-busy), a reply's last write lands before the
// runner goes idle (a failed turn's error lands just after: idle without its
// blocked reason for that moment), and a prompt sent with noReply or one whose
// turn died inside the server stays unanswered while the server is idle
// (docs/agents/opencode.md §4.1 (2)). ok is false when any candidate is not a
// server that answered.
func notRunning(r record, procs []ocProc, answered map[served]string, tdetail string) (discover.Verdict, bool) {
	for _, p := range procs {
		if p.Session == r.ID {
			return discover.Verdict{}, false // a `run -s` of it: decide's
		}
	}
	cands := candidatesFor(r, procs)
	if len(cands) == 0 || r.Dir == "" {
		return discover.Verdict{}, false
	}
	var who []string
	for _, c := range cands {
		addr, ok := answered[served{c.PID, r.Dir}]
		if !ok {
			return discover.Verdict{}, false
		}
		who = append(who, fmt.Sprintf("opencode server %s (pid %d)", addr, c.PID))
	}
	sort.Strings(who)
	return discover.Verdict{Status: discover.StatusIdle, Evidence: discover.EvidenceServer, PID: cands[0].PID,
		Detail: fmt.Sprintf("%s: not busy in %s (GET /session/status), so not running; %s", strings.Join(who, ", "), r.Dir, tdetail)}, true
}

// openDirs are the directories of the open sessions a server could host.
func openDirs(recs []record, procs []ocProc) []string {
	seen := map[string]bool{}
	for _, r := range recs {
		if turn, _ := turnOf(r.Last); turn != discover.OutcomeOpen && turn != discover.OutcomeUnknown {
			continue
		}
		for _, p := range candidatesFor(r, procs) {
			if (p.Kind == kindHost || p.Kind == kindTUI) && r.Dir != "" {
				seen[r.Dir] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}
