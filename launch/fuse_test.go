package launch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

func TestFireFuseActions(t *testing.T) {
	rcv := newReceiver(t, "sec")
	d := testDeps(t)
	dir := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	exp := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	f := locks.Fuse{ID: "f-1", Directory: dir, Label: "nightly", ExpiresAt: exp,
		Script:  `echo "$AGENTCTL_FUSE_DIR|$AGENTCTL_FUSE_LABEL|$(pwd)" > ` + out + `; echo to-the-log`,
		Webhook: rcv.srv.URL, WebhookSecret: "sec", Event: "tests-done"}
	if err := d.FireFuse(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(b)), dir+"|nightly|"+dir; got != want {
		t.Errorf("script saw %q, want %q", got, want)
	}
	log, _ := os.ReadFile(d.Store.Path(FuseLog))
	if !strings.Contains(string(log), "to-the-log") {
		t.Errorf("script output not in %s: %q", FuseLog, log)
	}
	if rcv.count() != 1 {
		t.Fatalf("%d webhook deliveries", rcv.count())
	}
	body := rcv.bodies[0]
	if body["type"] != "fuse.expired" || body["directory"] != dir || body["label"] != "nightly" || body["expired_at"] != "2026-11-20T12:00:00Z" {
		t.Errorf("webhook body = %v", body)
	}
	var evs []meta.Event
	_ = d.Store.ReadEvents(func(ev meta.Event, _ []byte) bool { evs = append(evs, ev); return true })
	if len(evs) != 1 || evs[0].Type != "fuse.event" || evs[0].Name != "tests-done" || evs[0].Directory != dir {
		t.Errorf("journal = %+v", evs)
	}
}

// A failing script and an unreachable webhook are both reported; the webhook
// waits in the outbox.
func TestFireFuseFailures(t *testing.T) {
	rcv := newReceiver(t, "")
	rcv.fail.Store(10)
	d := testDeps(t)
	f := locks.Fuse{ID: "f-2", Directory: filepath.Join(t.TempDir(), "gone"), Script: "exit 3", Webhook: rcv.srv.URL}
	err := d.FireFuse(context.Background(), f)
	if err == nil || !strings.Contains(err.Error(), "exit 3") || !strings.Contains(err.Error(), "outbox") {
		t.Fatalf("err = %v", err)
	}
	if ob, _ := d.Store.ReadOutbox(); len(ob) != 1 {
		t.Errorf("outbox = %+v", ob)
	}
}
