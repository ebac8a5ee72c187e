package opencode

import (
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// Server is a live opencode process that can serve its HTTP API (`serve`,
// `web`, a TUI — which listens only when started with --port) and keeps its
// sessions in the store env reads, with the loopback addresses it listens on.
type Server struct {
	PID   int
	Addrs []string // host:port
}

// Servers lists them (none without a process table): where `agentctl send`
// asks for a session (send/opencode.go). Nothing is asked here.
func Servers(env *discover.Env) []Server {
	procs, ok := scanProcs(env, func(proc.Process) (time.Time, bool) { return time.Time{}, false }, nil)
	if !ok {
		return nil
	}
	var out []Server
	for _, p := range procs {
		if p.Kind != kindHost && p.Kind != kindTUI {
			continue
		}
		if addrs := listenAddrs(p.PID); len(addrs) > 0 {
			out = append(out, Server{PID: p.PID, Addrs: addrs})
		}
	}
	return out
}
