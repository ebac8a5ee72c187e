package openclaw

import (
	"path/filepath"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/gateway"
)

// DataDir is OpenClaw's state dir, the one holding its config (discover.DataDirer):
// sessions live behind the gateway, but the config says where the gateway is.
func (a *Adapter) DataDir(env *discover.Env) string {
	p := gateway.ConfigPath(settings(env))
	if p == "" {
		return ""
	}
	return filepath.Dir(p)
}
