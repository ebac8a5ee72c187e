package launch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

// Nothing a state dir names runs or is sent when the dir fails the trust rule
// (issue 34 item 1): a fuse's script and webhook, a hook, the outbox. The
// check sits where things run, so no caller can forget it.
func TestNothingRunsFromAnUntrustedStateDir(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { posts.Add(1) }))
	defer srv.Close()
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, dir string)
	}{
		{"world-writable", func(t *testing.T, dir string) { os.Chmod(dir, 0o777) }},
		{"another user's", func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to chown")
			}
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			posts.Store(0)
			dir := filepath.Join(t.TempDir(), "state")
			os.Mkdir(dir, 0o700)
			d := DefaultDeps(meta.NewStore(dir), &meta.Config{})
			d.WebhookBackoff = nil
			marker := filepath.Join(t.TempDir(), "ran")
			tc.spoil(t, dir)

			res, err := d.RunHook(context.Background(), "on-complete", "touch "+marker, t.TempDir(), nil, filepath.Join(t.TempDir(), "log"))
			if res != "refused" || err == nil || !strings.Contains(err.Error(), dir) {
				t.Errorf("RunHook: %q %v; want refused, naming %s", res, err, dir)
			}
			err = d.FireFuse(context.Background(), locks.Fuse{Directory: t.TempDir(), Script: "touch " + marker, Webhook: srv.URL, ExpiresAt: time.Now()})
			if err == nil {
				t.Error("FireFuse from an untrusted dir: no error")
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("a script ran from an untrusted state dir")
			}
			if _, _, err := d.RetryOutbox(context.Background()); err == nil {
				t.Error("RetryOutbox from an untrusted dir: no error")
			}
			if n := posts.Load(); n != 0 {
				t.Errorf("%d webhook(s) sent from an untrusted state dir", n)
			}
			if _, err := os.Stat(filepath.Join(dir, meta.OutboxFile)); err == nil {
				t.Error("a refused webhook was parked in the untrusted dir's outbox")
			}
		})
	}
}
