// Package opencode is the OpenCode adapter's read side (spec: agents/opencode.md).
package opencode

import (
	"context"

	"github.com/agentctl/agentctl/discover"
)

// Name is the adapter name.
const Name = "opencode"

// Adapter reads OpenCode sessions.
type Adapter struct{}

// New returns the OpenCode adapter.
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
