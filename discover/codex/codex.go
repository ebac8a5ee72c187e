// Package codex is the Codex adapter's read side (spec: agents/codex.md).
package codex

import (
	"context"

	"github.com/agentctl/agentctl/discover"
)

// Name is the adapter name.
const Name = "codex"

// Adapter reads Codex sessions.
type Adapter struct{}

// New returns the Codex adapter.
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
