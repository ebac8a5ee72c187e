package gemini

import (
	"testing"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/e2e/synth"
)

// home is the read-side benchmark set over synth.WriteGeminiHome (the shapes of
// the shared recordings), as the other adapters have; docs/performance.md has
// the figures and the command.
var home = discovertest.GeneratedHome{New: func() discover.Adapter { return New() }, Write: synth.WriteGeminiHome, N: 1000}

func TestSynthHome(t *testing.T) { home.CheckSynth(t, 200) }

// BenchmarkHomeList is `list -a` with the parse index warm.
func BenchmarkHomeList(b *testing.B) { home.BenchList(b, true, nil) }

// BenchmarkHomeListCold is `list -a` without the parse index.
func BenchmarkHomeListCold(b *testing.B) { home.BenchList(b, false, nil) }

// BenchmarkHomeAliveOnly is `list` (alive only), nothing alive.
func BenchmarkHomeAliveOnly(b *testing.B) {
	home.BenchList(b, true, func(env *discover.Env) { env.OnlyAlive = true })
}

// BenchmarkHomeUsage is `usage` (every session with its usage slots).
func BenchmarkHomeUsage(b *testing.B) {
	home.BenchList(b, true, func(env *discover.Env) { env.Slots = true })
}

// BenchmarkHomeFind is `status ID`: one session looked up by its full id.
func BenchmarkHomeFind(b *testing.B) { home.BenchFind(b) }
