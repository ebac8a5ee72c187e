package claude

// MayHold reports whether a Claude Code session can have this id: a session is
// a <uuid>.jsonl transcript or a registry entry, and both carry the UUID Claude
// made (docs/agents/claude-code.md), so an exact id of another shape (an
// OpenCode ses_…, an OpenClaw key) resolves without waiting for this adapter
// (discover.FindFor).
func (a *Adapter) MayHold(id string) bool { return isUUID(id) }
