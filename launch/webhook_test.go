package launch

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/meta"
)

// receiver is a local webhook endpoint that verifies signatures.
type receiver struct {
	t      *testing.T
	secret string
	mu     sync.Mutex
	bodies []map[string]any
	ids    []string
	fail   atomic.Int32 // answer 500 this many times first
	srv    *httptest.Server
	onPost func() // called as each request arrives, before it is answered
}

func newReceiver(t *testing.T, secret string) *receiver {
	r := &receiver{t: t, secret: secret}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if r.onPost != nil {
		r.onPost()
	}
	if r.fail.Add(-1) >= 0 {
		w.WriteHeader(500)
		return
	}
	if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
		r.t.Errorf("webhook: %s with content type %q", req.Method, req.Header.Get("Content-Type"))
	}
	if r.secret != "" {
		m := hmac.New(sha256.New, []byte(r.secret))
		m.Write(body)
		want := hex.EncodeToString(m.Sum(nil))
		for h, v := range map[string]string{"X-Agentctl-Signature": want, "X-Signature": "sha256=" + want, "X-Hub-Signature-256": "sha256=" + want} {
			if got := req.Header.Get(h); got != v {
				r.t.Errorf("%s = %q, want %q", h, got, v)
			}
		}
	}
	if req.Header.Get("X-Agentctl-Delivery") == "" || req.Header.Get("X-Agentctl-Timestamp") == "" {
		r.t.Errorf("missing delivery/timestamp headers: %v", req.Header)
	}
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		r.t.Errorf("body is not JSON: %s", body)
	}
	r.mu.Lock()
	r.bodies = append(r.bodies, v)
	r.ids = append(r.ids, req.Header.Get("X-Agentctl-Delivery"))
	r.mu.Unlock()
}

func (r *receiver) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.bodies) }

func testDeps(t *testing.T) *Deps {
	t.Helper()
	st := meta.NewStore(filepath.Join(t.TempDir(), "state"))
	d := DefaultDeps(st, &meta.Config{})
	d.WebhookBackoff = []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
	d.Warn = func(m string) { t.Logf("warning: %s", m) }
	return d
}

func TestWebhookPayloadAndSignature(t *testing.T) {
	rcv := newReceiver(t, "s3cret")
	d := testDeps(t)
	code := 3
	launched := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	endedAt := launched.Add(90 * time.Second)
	rec := &meta.Launch{ID: "l-1", Adapter: "claude-code", SessionID: "sid-1", Cwd: "/w", Prompt: string(make([]rune, 0)) + "ä" + string(make([]byte, 0)),
		LaunchedAt: launched, EndedAt: &endedAt, ExitCode: &code, Meta: map[string]string{"callback_session_key": "k1"}}
	for len([]rune(rec.Prompt)) < 300 {
		rec.Prompt += "ä"
	}
	del, err := NewDelivery(rcv.srv.URL, "s3cret", PayloadFor(rec, endedAt), endedAt)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.deliver(context.Background(), del, true); err != nil {
		t.Fatal(err)
	}
	if rcv.count() != 1 {
		t.Fatalf("%d deliveries", rcv.count())
	}
	b := rcv.bodies[0]
	for _, k := range []string{"hook_type", "session_id", "adapter", "cwd", "duration_seconds", "exit_status", "summary", "meta", "timestamp"} {
		if _, ok := b[k]; !ok {
			t.Errorf("payload lacks %q", k)
		}
	}
	if b["hook_type"] != "session.stopped" || b["session_id"] != "sid-1" || b["exit_status"] != float64(3) || b["duration_seconds"] != float64(90) {
		t.Errorf("payload = %v", b)
	}
	if n := len([]rune(b["summary"].(string))); n != 200 {
		t.Errorf("summary has %d runes, want the prompt's first 200", n)
	}
	if b["meta"].(map[string]any)["callback_session_key"] != "k1" {
		t.Errorf("meta = %v", b["meta"])
	}
	// exit_status is null (not absent) when unknown.
	rec.ExitCode = nil
	p, _ := json.Marshal(PayloadFor(rec, endedAt))
	var m map[string]any
	json.Unmarshal(p, &m)
	if v, ok := m["exit_status"]; !ok || v != nil {
		t.Errorf("unknown exit: exit_status = %v (present %v), want null", v, ok)
	}
}

// Three retries with back-off; a delivery that still fails goes to the outbox,
// and a later sweep (RetryOutbox) sends the very same signed body once.
func TestWebhookRetriesAndOutbox(t *testing.T) {
	rcv := newReceiver(t, "k")
	d := testDeps(t)
	now := time.Now()
	rcv.fail.Store(2)
	del, _ := NewDelivery(rcv.srv.URL, "k", map[string]any{"a": 1}, now)
	if err := d.deliver(context.Background(), del, true); err != nil {
		t.Fatalf("two failures then success: %v", err)
	}
	if rcv.count() != 1 {
		t.Fatalf("deliveries = %d", rcv.count())
	}

	rcv.fail.Store(4)
	del, _ = NewDelivery(rcv.srv.URL, "k", map[string]any{"b": 2}, now)
	if err := d.deliver(context.Background(), del, true); err == nil {
		t.Fatal("four failures reported as success")
	}
	ob, _ := d.Store.ReadOutbox()
	if len(ob) != 1 || ob[0].Attempts != 4 || ob[0].ID != del.ID {
		t.Fatalf("outbox = %+v", ob)
	}
	// Not due yet.
	if n, pending, _ := d.RetryOutbox(context.Background()); n != 0 || pending != 1 {
		t.Errorf("retry before due: delivered %d pending %d", n, pending)
	}
	d.Store.Now = func() time.Time { return now.Add(2 * time.Minute) }
	if n, pending, err := d.RetryOutbox(context.Background()); err != nil || n != 1 || pending != 0 {
		t.Fatalf("retry when due: delivered %d pending %d err %v", n, pending, err)
	}
	if rcv.count() != 2 || rcv.ids[1] != del.ID {
		t.Errorf("the outbox must resend the same delivery: ids %v", rcv.ids)
	}
}

// Delivery is at least once (issue 34 item 11): before the first attempt the
// delivery is in the outbox, claimed by the sender, so a sender killed mid-POST
// leaves it for the next sweep — which resends the same delivery id once the
// claimer is gone — and a delivered one is taken out.
func TestWebhookAtLeastOnce(t *testing.T) {
	rcv := newReceiver(t, "k")
	d := testDeps(t)
	var during []meta.Delivery
	rcv.onPost = func() {
		ob, err := d.Store.ReadOutbox()
		if err != nil {
			t.Error(err)
		}
		during = append(during, ob...)
	}
	del, _ := NewDelivery(rcv.srv.URL, "k", map[string]any{"a": 1}, time.Now())
	if err := d.deliver(context.Background(), del, true); err != nil {
		t.Fatal(err)
	}
	if len(during) != 1 || during[0].ID != del.ID || during[0].ClaimPID != os.Getpid() {
		t.Fatalf("outbox while the POST was in flight = %+v; want the delivery, claimed by this process", during)
	}
	if ob, _ := d.Store.ReadOutbox(); len(ob) != 0 {
		t.Fatalf("outbox after a delivery = %+v; want empty", ob)
	}

	// The sender was killed mid-POST: its claim is left, its process gone.
	rcv.onPost = nil
	dead := during[0]
	dead.ClaimPID, dead.ClaimStart = 1<<22+7, 1
	if err := d.Store.UpdateOutbox(func(o *meta.Outbox) (bool, error) {
		o.Deliveries = append(o.Deliveries, dead)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if n, pending, err := d.RetryOutbox(context.Background()); err != nil || n != 1 || pending != 0 {
		t.Fatalf("sweep after a killed sender: delivered %d pending %d err %v", n, pending, err)
	}
	if diff := cmp.Diff([]string{del.ID, del.ID}, rcv.ids); diff != "" {
		t.Errorf("delivery ids received (-want +got):\n%s", diff)
	}
}
