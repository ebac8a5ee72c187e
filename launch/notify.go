package launch

import (
	"context"

	"github.com/agentctl/agentctl/meta"
)

// NotifyLog is where `notify --exec` commands write, in the state dir; it is
// rotated like the fuse log (one old generation, at 1 MiB).
const NotifyLog = "logs/notify.log"

// PrepareNotifyLog creates the log's directory and rotates the log when it has
// grown past the limit.
func PrepareNotifyLog(path string) error { return rotateFuseLog(path) }

// DeliverOnce makes one attempt at a webhook delivery and parks it in the
// outbox when it fails, for sweep to retry. `notify` uses it: a run meant for
// cron must not sleep through the in-process back-off.
func (d *Deps) DeliverOnce(ctx context.Context, del meta.Delivery) error {
	return d.deliver(ctx, del, false)
}
