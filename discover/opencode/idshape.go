package opencode

import "strings"

// MayHold reports whether an OpenCode session can have this id: OpenCode names
// every session ses_… in both layouts (docs/agents/opencode.md), so an exact
// UUID of another agent resolves without waiting for this adapter
// (discover.FindFor).
func (a *Adapter) MayHold(id string) bool { return strings.HasPrefix(id, "ses_") }
