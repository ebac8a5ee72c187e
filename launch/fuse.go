package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentctl/agentctl/locks"
	"github.com/agentctl/agentctl/meta"
)

// FusePayload is the body of a fuse's expiry webhook (product.md §6).
type FusePayload struct {
	Type      string `json:"type"` // fuse.expired
	Directory string `json:"directory"`
	Label     string `json:"label"`
	ExpiredAt string `json:"expired_at"`
}

// FuseLog is where fuse scripts' output goes, under the state dir.
const FuseLog = "logs/fuses.log"

// fuseLogMax is the size at which the fuse log is rotated (one old generation
// kept): fuses fire from cron for years, and nothing may accumulate.
const fuseLogMax = 1 << 20

// FireFuse runs an expired fuse's actions: the script (sh -c, in the fuse's
// directory, AGENTCTL_FUSE_DIR and AGENTCTL_FUSE_LABEL set, the hook timeout,
// output appended to FuseLog), the webhook (signed like session webhooks; one
// attempt here, a failure waits in the outbox for sweep) and the fuse.event
// journal line. Every action runs even when an earlier one failed; the errors
// come back joined. It is the act of locks.FireDueFuses and takes no lock.
func (d *Deps) FireFuse(ctx context.Context, f locks.Fuse) error {
	var errs []error
	if f.Event != "" {
		ev := meta.Event{Type: meta.EventFuseEvent, Name: f.Event, Directory: f.Directory, Data: map[string]any{"fuse_id": f.ID}}
		if f.Label != "" {
			ev.Data["label"] = f.Label
		}
		if err := d.Store.AppendEvent(ev); err != nil {
			errs = append(errs, fmt.Errorf("fuse on %s: event %q: %w", f.Directory, f.Event, err))
		}
	}
	if f.Webhook != "" {
		p := FusePayload{Type: meta.EventFuseExpired, Directory: f.Directory, Label: f.Label, ExpiredAt: f.ExpiresAt.UTC().Format(time.RFC3339)}
		del, err := NewDelivery(f.Webhook, f.WebhookSecret, p, d.now())
		if err == nil {
			err = d.deliver(ctx, del, false)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("fuse on %s: %w", f.Directory, err))
		}
	}
	if f.Script != "" {
		log := d.Store.Path(FuseLog)
		if err := rotateFuseLog(log); err != nil {
			errs = append(errs, fmt.Errorf("fuse on %s: %w", f.Directory, err))
		} else {
			dir := f.Directory
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				// The directory may be gone by now: the script still runs,
				// from the state dir, and finds the path in AGENTCTL_FUSE_DIR.
				dir = d.Store.Dir
			}
			env := []string{"AGENTCTL_FUSE_DIR=" + f.Directory, "AGENTCTL_FUSE_LABEL=" + f.Label}
			if _, err := d.RunHook(ctx, "fuse "+f.Directory, f.Script, dir, env, log); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func rotateFuseLog(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if st, err := os.Stat(path); err == nil && st.Size() > fuseLogMax {
		if err := os.Rename(path, path+".1"); err != nil {
			return fmt.Errorf("rotate %s: %w", path, err)
		}
	}
	return nil
}
