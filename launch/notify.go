package launch

import (
	"context"

	"github.com/agentctl/agentctl/meta"
)

// DeliverOnce makes one attempt at a webhook delivery and parks it in the
// outbox when it fails, for sweep to retry. `notify` uses it: a run meant for
// cron must not sleep through the in-process back-off.
func (d *Deps) DeliverOnce(ctx context.Context, del meta.Delivery) error {
	return d.deliver(ctx, del, false)
}
