// Package stub is a scriptable stand-in for the model APIs the agent CLIs call,
// for end-to-end tests on 127.0.0.1. One server speaks all three wire formats:
//
//	POST /v1/messages          Anthropic Messages, SSE (Claude Code)
//	POST /v1/responses         OpenAI Responses, SSE (Codex)
//	POST /v1/chat/completions  OpenAI Chat Completions, SSE chunks (OpenCode, Pi, OpenClaw,
//	                           Qwen Code, Copilot)
//	POST /v1beta/models/M:streamGenerateContent, :generateContent  the Gemini API (gemini.go)
//
// Each model request is answered as its Script decides (by default from keywords in
// the last user message), and every request is recorded together with what the
// server sent back — ids, text and token usage — so tests compute expected values
// from what the model "said", never from agentctl's own output.
package stub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// API names, as recorded in Request.API.
const (
	Anthropic = "anthropic"
	Responses = "responses"
	Chat      = "chat"
	Gemini    = "gemini"
)

// Request is one recorded HTTP request, with what the stub understood of it.
type Request struct {
	Seq    int // 1-based, in arrival order
	At     time.Time
	API    string // Anthropic, Responses, Chat; "" for any other path
	Method string
	Path   string
	Header http.Header
	Body   []byte

	Model  string
	Stream bool
	// LastUser is the text of the last user message (Anthropic system reminders
	// dropped); ToolResult says that message carries a tool result instead, whose
	// text is ToolOutput.
	LastUser   string
	ToolResult bool
	ToolOutput string
	// Tools are the names of the tools the agent offered; none means an auxiliary
	// request such as title generation.
	Tools []string
	// SessionID is Claude Code's X-Claude-Code-Session-Id header.
	SessionID string
}

// Exchange is a request plus what the stub answered.
type Exchange struct {
	Request Request
	Reply   Reply // as scripted
	Status  int   // HTTP status sent (0 while the request is parked or delayed)
	// MessageID and RequestID are the ids the response carried (Anthropic:
	// message.id and the request-id header; OpenAI: the response/chunk id).
	MessageID, RequestID string
	Text                 string // assistant text sent
	Usage                Usage  // token usage sent; zero for errors
	// Completed is true once the whole response was written; false when the
	// client went away first (killed agent) or the request is still open.
	Completed bool
	// Done is when the response was completed (zero until Completed): the
	// accuracy benchmark's ground truth for "the agent has the reply".
	Done time.Time
}

// Server is a running stub. Create it with Start (tests) or New.
type Server struct {
	srv    *httptest.Server
	script Script
	prefix string // random per server, so ids never collide across servers

	mu    sync.Mutex
	log   []*Exchange
	holds map[string]*hold
	done  chan struct{}
	once  sync.Once
}

type hold struct {
	arrived  chan struct{}
	released chan struct{}
	aOnce    sync.Once
	rOnce    sync.Once
}

// New starts a server on 127.0.0.1 with a random port. A nil script means Keywords.
func New(script Script) *Server {
	if script == nil {
		script = Keywords
	}
	b := make([]byte, 4)
	rand.Read(b)
	s := &Server{script: script, prefix: hex.EncodeToString(b), holds: map[string]*hold{}, done: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle)) // binds 127.0.0.1
	return s
}

// Start starts a server that is closed in tb's cleanup.
func Start(tb testing.TB, script Script) *Server {
	s := New(script)
	tb.Cleanup(s.Close)
	return s
}

// URL is the base URL without a path, e.g. http://127.0.0.1:41234.
func (s *Server) URL() string { return s.srv.URL }

// Close releases every parked request and stops the server.
func (s *Server) Close() {
	s.once.Do(func() { close(s.done) })
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Exchanges returns a copy of everything recorded so far, in arrival order.
func (s *Server) Exchanges() []Exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Exchange, len(s.log))
	for i, e := range s.log {
		out[i] = *e
	}
	return out
}

// ModelExchanges returns the recorded model requests (any API) that match keep
// (nil keeps all).
func (s *Server) ModelExchanges(keep func(Exchange) bool) []Exchange {
	var out []Exchange
	for _, e := range s.Exchanges() {
		if e.Request.API != "" && (keep == nil || keep(e)) {
			out = append(out, e)
		}
	}
	return out
}

// SentUsage sums the usage of completed responses that match keep.
func (s *Server) SentUsage(keep func(Exchange) bool) Usage {
	var u Usage
	for _, e := range s.ModelExchanges(keep) {
		if e.Completed {
			u.Add(e.Usage)
		}
	}
	return u
}

func (s *Server) holdFor(name string) *hold {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.holds[name]
	if !ok {
		h = &hold{arrived: make(chan struct{}), released: make(chan struct{})}
		s.holds[name] = h
	}
	return h
}

// Release lets the request parked under name continue (also if it has not
// arrived yet: it will then pass straight through).
func (s *Server) Release(name string) {
	h := s.holdFor(name)
	h.rOnce.Do(func() { close(h.released) })
}

// WaitHeld blocks until a request is parked under name.
func (s *Server) WaitHeld(ctx context.Context, name string) error {
	h := s.holdFor(name)
	select {
	case <-h.arrived:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("no model request parked under HOLD=%s: %w", name, ctx.Err())
	}
}

func (s *Server) update(e *Exchange, f func(*Exchange)) {
	s.mu.Lock()
	f(e)
	s.mu.Unlock()
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{At: time.Now(), Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	var write func(ctx context.Context, w http.ResponseWriter, e *Exchange, rep Reply) error
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		req.API, write = Anthropic, s.writeAnthropic
		parseAnthropic(&req)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		req.API, write = Responses, s.writeResponses
		parseResponses(&req)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		req.API, write = Chat, s.writeChat
		parseChat(&req)
	case r.Method == http.MethodPost && isGeminiTurn(r.URL.Path):
		model, method, _ := geminiCall(r.URL.Path)
		req.API, write = Gemini, s.writeGemini
		parseGemini(&req, model, method)
	}
	e := &Exchange{Request: req}
	s.mu.Lock()
	s.log = append(s.log, e)
	e.Request.Seq = len(s.log)
	s.mu.Unlock()

	if req.API == "" {
		s.other(w, r, e)
		return
	}
	rep := s.script(&e.Request)
	if len(req.Tools) == 0 {
		// Auxiliary requests (OpenCode's title generation, …) get a plain answer:
		// a HOLD or delay meant for the turn must not stall them.
		rep = Reply{Text: rep.Text, Usage: rep.Usage}
	}
	s.update(e, func(e *Exchange) { e.Reply = rep })

	if err := s.wait(r.Context(), rep); err != nil {
		return // client went away or the server is closing
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		// Marked before the write, as run does: the client acts on what it reads.
		s.update(e, func(e *Exchange) { e.Status, e.Completed, e.Done = rep.Status, true, time.Now() })
		writeError(w, req.API, rep.Status, rep.ErrorText)
		return
	}
	// write marks the exchange Completed as it writes the last event (run).
	_ = write(r.Context(), w, e, rep)
}

// wait applies Hold and Delay.
func (s *Server) wait(ctx context.Context, rep Reply) error {
	if rep.Hold != "" {
		h := s.holdFor(rep.Hold)
		h.aOnce.Do(func() { close(h.arrived) })
		select {
		case <-h.released:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return errors.New("server closed")
		}
	}
	return s.sleep(ctx, rep.Delay)
}

func (s *Server) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return errors.New("server closed")
	}
}

// other answers the non-model endpoints the CLIs may call.
func (s *Server) other(w http.ResponseWriter, r *http.Request, e *Exchange) {
	s.update(e, func(e *Exchange) { e.Status, e.Completed, e.Done = http.StatusOK, true, time.Now() })
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/v1/models":
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-model","object":"model","created":0,"owned_by":"fake"}]}`)
	case r.URL.Path == "/v1/messages/count_tokens":
		fmt.Fprint(w, `{"input_tokens":10}`)
	case strings.HasSuffix(r.URL.Path, ":countTokens"):
		fmt.Fprint(w, `{"totalTokens":10}`)
	default:
		fmt.Fprint(w, `{}`)
	}
}

func writeError(w http.ResponseWriter, api string, status int, text string) {
	if api == Gemini {
		writeGeminiError(w, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_error")
	w.WriteHeader(status)
	msg := fmt.Sprintf("stub error %d (scripted)", status)
	if text != "" {
		msg = text
	}
	if api == Anthropic {
		typ := "api_error"
		switch {
		case status == 400:
			typ = "invalid_request_error"
		case status == 401:
			typ = "authentication_error"
		case status == 529:
			typ = "overloaded_error"
		}
		json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "server_error", "code": status}})
}

// defaultUsage picks distinctive numbers that differ per request, so a total
// that double counts, drops or mixes up a response cannot match by accident.
func defaultUsage(api string, seq int) Usage {
	n := int64(seq)
	switch api {
	case Anthropic:
		return Usage{Input: 7 + n, Output: 42 + n, CacheWrite: 100 + n, CacheRead: 1000 + n}
	case Responses:
		return Usage{Input: 40 + n, Output: 7 + n, CacheRead: 2}
	}
	return Usage{Input: 123 + n, Output: 45 + n}
}

func (s *Server) usage(e *Exchange, rep Reply) Usage {
	if rep.Usage != nil {
		return *rep.Usage
	}
	return defaultUsage(e.Request.API, e.Request.Seq)
}

func (s *Server) id(kind string, seq int) string {
	return fmt.Sprintf("%s_%s%06d", kind, s.prefix, seq)
}

// replyText is the text to send: the scripted one, else the default unless the
// reply is a pure tool call.
func replyText(e *Exchange, rep Reply) string {
	if rep.Text != "" || rep.Tool != nil {
		return rep.Text
	}
	return DefaultText(e.Request.LastUser)
}

// chunks splits text into word-sized deltas (keeping the spaces), as real
// streams do.
func chunks(text string) []string {
	var out []string
	for len(text) > 0 {
		i := strings.IndexByte(text[1:], ' ')
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+1])
		text = text[i+1:]
	}
	return out
}

// run writes a response step by step: the first step (the stream's opening
// event), then Stall, then the rest. It stops at the first write error or when the
// client goes away, so a killed agent leaves the exchange not Completed.
//
// The exchange is marked Completed just before the last step is written: a
// client may act on the last event the moment it arrives (Codex exits at
// response.completed), and whoever watches the client must never see it done
// before the stub says so. A failed last write takes the mark back.
func (s *Server) run(ctx context.Context, e *Exchange, steps []func() error, rep Reply) error {
	for i, step := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		last := i == len(steps)-1
		if last {
			s.update(e, func(e *Exchange) { e.Completed, e.Done = true, time.Now() })
		}
		if err := step(); err != nil {
			if last {
				s.update(e, func(e *Exchange) { e.Completed, e.Done = false, time.Time{} })
			}
			return err
		}
		if i == 0 {
			if err := s.sleep(ctx, rep.Stall); err != nil {
				return err
			}
		}
	}
	return nil
}

// sse writes server-sent events and flushes after each one.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter, requestID string) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "close")
	if requestID != "" {
		h.Set("request-id", requestID)
		h.Set("x-request-id", requestID)
	}
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// event writes `event: name` (omitted when name is "") and `data: <json>`.
func (s *sse) event(name string, data any) error {
	var b []byte
	switch d := data.(type) {
	case string:
		b = []byte(d)
	default:
		var err error
		if b, err = json.Marshal(data); err != nil {
			return err
		}
	}
	var err error
	if name != "" {
		_, err = fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b)
	} else {
		_, err = fmt.Fprintf(s.w, "data: %s\n\n", b)
	}
	if err == nil && s.f != nil {
		s.f.Flush()
	}
	return err
}
