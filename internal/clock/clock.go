// Package clock is waiting that a context can cut short.
package clock

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends, whichever comes first; then it returns
// ctx.Err().
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
