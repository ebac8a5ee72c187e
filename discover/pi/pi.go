// Package pi is the Pi adapter's read side (spec: agents/pi.md).
package pi

import (
	"context"

	"github.com/agentctl/agentctl/discover"
)

// Name is the adapter name.
const Name = "pi"

// Adapter reads Pi sessions.
type Adapter struct{}

// New returns the Pi adapter.
func New() *Adapter { return &Adapter{} }

func (a *Adapter) Name() string { return Name }

// Discover is not implemented yet.
func (a *Adapter) Discover(ctx context.Context, env *discover.Env) ([]discover.Session, error) {
	return nil, nil
}

// Peek is not implemented yet.
func (a *Adapter) Peek(ctx context.Context, env *discover.Env, s discover.Session, n int) ([]discover.Message, error) {
	return nil, discover.ErrNoSession
}
