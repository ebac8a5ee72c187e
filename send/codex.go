package send

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// Codex's own channel (docs/agents/codex.md "Send"): the TUI runs its threads
// in an app-server daemon (`codex app-server --listen unix:// --managed-daemon`)
// that keeps serving its JSON-RPC protocol on a unix socket; a WebSocket on
// that socket. `codex queue` itself connects there and sends thread/queue/add
// with the message in the request body (its argv is the only problem with it);
// agentctl sends the same request. On a thread the daemon has loaded, an idle
// thread starts a turn with it at once, a busy one runs it after the turn; the
// rollout then records it as a user message.

// ViaCodexServer is the channel (can_send, send's "via"): thread/queue/add to
// the app-server daemon that hosts the thread.
const ViaCodexServer = "codex-app-server"

// codexTimeout bounds one exchange with the daemon (connect, initialize, a
// request).
const codexTimeout = 10 * time.Second

// codexReadLimit is the largest message read from the daemon: thread/read
// without turns is a few KiB; the daemon announces 16 MiB frames.
const codexReadLimit = 16 << 20

// CodexControlSocket is where `codex app-server --listen unix://` (the TUI's
// daemon) listens, under CODEX_HOME (a symlink to the socket under /tmp).
func CodexControlSocket(codexHome string) string {
	return filepath.Join(codexHome, "app-server-control", "app-server-control.sock")
}

// CodexListen returns the unix socket an app-server process listens on, from
// its argv (`codex app-server --listen unix://` or `unix://PATH`): "" with
// ok for the default path (CodexControlSocket), ok false when argv is no
// app-server on a unix socket (stdio, a websocket port, any other process).
func CodexListen(argv []string) (path string, ok bool) {
	app := false
	for i, a := range argv {
		if a == "app-server" {
			app = true
			continue
		}
		v, isListen := strings.CutPrefix(a, "--listen=")
		if !isListen && a == "--listen" && i+1 < len(argv) {
			v, isListen = argv[i+1], true
		}
		if app && isListen {
			if p, unix := strings.CutPrefix(v, "unix://"); unix {
				return p, true
			}
			return "", false
		}
	}
	return "", false
}

// CodexHosted reports, from the process table only, whether a live Codex
// session's thread is held by an app-server listening on a unix socket: its
// lock holder (the session's PID) is one. list and status show it as
// can_send; FindCodex asks the daemon before anything is sent.
func CodexHosted(t proc.Table, s *discover.Session) bool {
	if t == nil || s.Adapter != "codex" || s.PID <= 0 {
		return false
	}
	argv, err := t.Argv(s.PID)
	if err != nil {
		return false
	}
	_, ok := CodexListen(argv)
	return ok
}

// CodexHost is the app-server that hosts a thread, and what it says of it.
type CodexHost struct {
	PID    int
	Socket string
	Status string // discover.StatusIdle, StatusRunning, StatusWaiting or StatusUnknown
	Queued int    // messages waiting in the thread's queue
}

// ErrNotHosted: no app-server daemon has the thread loaded.
var ErrNotHosted = errors.New("no codex app-server has this thread loaded")

// CodexSocketFor is the socket of the app-server that holds s (CodexHosted),
// codexHome being where s was found.
func CodexSocketFor(t proc.Table, codexHome string, s *discover.Session) (string, bool) {
	if !CodexHosted(t, s) {
		return "", false
	}
	argv, _ := t.Argv(s.PID)
	p, _ := CodexListen(argv)
	if p == "" {
		p = CodexControlSocket(codexHome)
	}
	return p, true
}

// FindCodex asks the app-server on socket whether it has thread id loaded
// (thread/loaded/list), what state it is in (thread/read) and what waits in
// its queue (thread/queue/list).
//
// The daemon starts a queued message by itself when it is added to an empty
// queue of an idle thread, and runs the rest after each turn. Messages queued
// while the thread was not loaded (`codex queue` on a closed thread) stay put
// once it is loaded, until a client starts the queue: a message added behind
// them would wait as well, so an idle thread with a queue is refused
// (ErrQueueStalled) after one second's second look (between two queued turns
// the thread is idle for a moment).
func FindCodex(ctx context.Context, socket string, pid int, id string) (CodexHost, error) {
	c, err := dialCodex(ctx, socket)
	if err != nil {
		return CodexHost{}, err
	}
	defer c.close()
	loaded, err := c.loaded(ctx, id)
	if err != nil {
		return CodexHost{}, err
	}
	if !loaded {
		return CodexHost{}, ErrNotHosted
	}
	h := CodexHost{PID: pid, Socket: socket}
	for look := 0; ; look++ {
		if h.Status, err = c.status(ctx, id); err != nil {
			return CodexHost{}, err
		}
		if h.Queued, err = c.queued(ctx, id); err != nil {
			return CodexHost{}, err
		}
		if h.Status != discover.StatusIdle || h.Queued == 0 {
			return h, nil
		}
		if look == 1 {
			return h, fmt.Errorf("%w: %d message(s) wait in its queue and it has not started them "+
				"(queued while the thread was not loaded); start them from a Codex client (the protocol's thread/queue/start), then send", ErrQueueStalled, h.Queued)
		}
		select {
		case <-ctx.Done():
			return CodexHost{}, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// ErrQueueStalled: the thread is idle with messages in its queue that the
// daemon does not start by itself.
var ErrQueueStalled = errors.New("the codex app-server holds the thread idle with a queue it has not started")

// status is thread/read's thread.status as a discover status; ErrNotHosted
// for a thread that is not loaded.
func (c *codexConn) status(ctx context.Context, id string) (string, error) {
	var r struct {
		Thread struct {
			Status struct {
				Type        string   `json:"type"`
				ActiveFlags []string `json:"activeFlags"`
			} `json:"status"`
		} `json:"thread"`
	}
	if err := c.call(ctx, "thread/read", map[string]any{"threadId": id}, &r); err != nil {
		return "", err
	}
	switch st := r.Thread.Status; st.Type {
	case "idle":
		return discover.StatusIdle, nil
	case "active":
		if len(st.ActiveFlags) > 0 { // waitingOnApproval, waitingOnUserInput
			return discover.StatusWaiting, nil
		}
		return discover.StatusRunning, nil
	case "notLoaded":
		return "", ErrNotHosted
	default: // systemError, or a state this release does not know
		return discover.StatusUnknown, nil
	}
}

// queued is how many messages wait in the thread's queue (the first page's
// count: any is enough to matter).
func (c *codexConn) queued(ctx context.Context, id string) (int, error) {
	var r struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := c.call(ctx, "thread/queue/list", map[string]any{"threadId": id}, &r); err != nil {
		return 0, err
	}
	return len(r.Data), nil
}

// QueueCodex hands msg to the thread's queue in the app-server on socket
// (thread/queue/add, what `codex queue` sends): the text is in the request
// body. It returns the queued submission's id.
func QueueCodex(ctx context.Context, socket, id, msg string) (string, error) {
	c, err := dialCodex(ctx, socket)
	if err != nil {
		return "", err
	}
	defer c.close()
	cid, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	var r struct {
		QueuedSubmission struct {
			ID string `json:"id"`
		} `json:"queuedSubmission"`
	}
	err = c.call(ctx, "thread/queue/add", map[string]any{
		"threadId":                   id,
		"input":                      []map[string]any{{"type": "text", "text": msg, "text_elements": []any{}}},
		"clientUserMessageId":        cid.String(),
		"responsesapiClientMetadata": nil,
	}, &r)
	if err != nil {
		return "", err
	}
	if r.QueuedSubmission.ID == "" {
		return "", errors.New("thread/queue/add: the answer names no queued submission")
	}
	return r.QueuedSubmission.ID, nil
}

// codexConn is one JSON-RPC connection to an app-server: a WebSocket over its
// unix socket, one JSON object a message (no "jsonrpc" member, as Codex's own
// clients send).
type codexConn struct {
	ws     *websocket.Conn
	socket string
	next   int
}

func dialCodex(ctx context.Context, socket string) (*codexConn, error) {
	ctx, cancel := context.WithTimeout(ctx, codexTimeout)
	defer cancel()
	if err := socketOfMine(socket); err != nil {
		return nil, err
	}
	tr := &http.Transport{Proxy: nil, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}
	ws, resp, err := websocket.Dial(ctx, "ws://localhost/rpc", &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("connect to the codex app-server at %s: %w", socket, err)
	}
	ws.SetReadLimit(codexReadLimit)
	c := &codexConn{ws: ws, socket: socket}
	err = c.call(ctx, "initialize", map[string]any{
		"clientInfo": map[string]string{"name": "agentctl", "version": "1"},
		// thread/queue/add is one of the protocol's experimental methods.
		"capabilities": map[string]any{"experimentalApi": true},
	}, nil)
	if err == nil {
		err = c.write(ctx, map[string]any{"method": "initialized"})
	}
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func (c *codexConn) close() { _ = c.ws.Close(websocket.StatusNormalClosure, "") }

func (c *codexConn) write(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// call sends one request and decodes its result into out, passing over the
// notifications the daemon sends meanwhile.
func (c *codexConn) call(ctx context.Context, method string, params, out any) error {
	ctx, cancel := context.WithTimeout(ctx, codexTimeout)
	defer cancel()
	c.next++
	id := c.next
	if err := c.write(ctx, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return fmt.Errorf("%s to the codex app-server at %s: %w", method, c.socket, err)
	}
	for {
		_, b, err := c.ws.Read(ctx)
		if err != nil {
			return fmt.Errorf("%s to the codex app-server at %s: %w", method, c.socket, err)
		}
		var m struct {
			ID     *json.RawMessage `json:"id"`
			Method string           `json:"method"`
			Result json.RawMessage  `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &m) != nil || m.ID == nil || m.Method != "" {
			continue // a notification, or a request of the server's own
		}
		var got int
		if json.Unmarshal(*m.ID, &got) != nil || got != id {
			continue
		}
		if m.Error != nil {
			return fmt.Errorf("%s: the codex app-server answered %d %s", method, m.Error.Code, trimLine(m.Error.Message))
		}
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(m.Result, out); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		return nil
	}
}

// loaded pages through thread/loaded/list looking for id.
func (c *codexConn) loaded(ctx context.Context, id string) (bool, error) {
	params := map[string]any{}
	for range 100 {
		var r struct {
			Data       []string `json:"data"`
			NextCursor *string  `json:"nextCursor"`
		}
		if err := c.call(ctx, "thread/loaded/list", params, &r); err != nil {
			return false, err
		}
		for _, d := range r.Data {
			if d == id {
				return true, nil
			}
		}
		if r.NextCursor == nil || *r.NextCursor == "" {
			return false, nil
		}
		params = map[string]any{"cursor": *r.NextCursor}
	}
	return false, nil
}

// socketOfMine refuses a socket another user could have put in the daemon's
// place: the message goes to whoever listens there. The socket (links
// followed: Codex's is a link into /tmp) must be a socket of this user's, in a
// directory of this user's that no one else can write to.
func socketOfMine(path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("connect to the codex app-server at %s: %w", path, err)
	}
	st, err := os.Lstat(real)
	if err != nil {
		return fmt.Errorf("connect to the codex app-server at %s: %w", real, err)
	}
	if st.Mode()&os.ModeSocket == 0 || !ownedByMe(st) {
		return fmt.Errorf("%s is not a socket of this user's; not sending there", real)
	}
	dir, err := os.Stat(filepath.Dir(real))
	if err != nil || !ownedByMe(dir) || dir.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("the directory of %s is not this user's alone; not sending there", real)
	}
	return nil
}
