package claude

import "github.com/agentctl/agentctl/discover"

// DataDir is where the agent keeps the files this adapter reads (discover.DataDirer).
func (a *Adapter) DataDir(env *discover.Env) string { return Root(env) }
