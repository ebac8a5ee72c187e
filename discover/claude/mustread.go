package claude

import (
	"time"

	"github.com/agentctl/agentctl/discover"
)

// tieSlack is how long before a process's start a transcript may have last
// been written and still be tied to it (evidence.go: the process scan and
// /clear both allow 2 s).
const tieSlack = 2 * time.Second

// mustRead is which transcripts a listing whose budget gave up reads all the
// same: those whose status can rest on live evidence. Leaving one of them out
// would change what a listing says about a live session, not just drop an old
// one: the sessions something alive may name (a registry entry whose process
// runs or cannot be checked, a claude argv, a launch record), those written in
// the last minute (judged mid-turn), and every transcript written since the
// earliest start of what ties a process to a session by cwd and timing (judge:
// the process scan's untied claude processes, /clear's live TUI registry
// entries), so that one left out cannot make another look tied.
func mustRead(env *discover.Env, regs []regCheck, claudes []claudeProc, now time.Time) func(*fileState) bool {
	alive := alivePossible(env, regs, claudes, false)
	delete(alive, "")
	var since discover.WrittenSince
	tied := tiedPIDs(regs, claudes)
	for _, p := range claudes {
		if !tied[p.PID] && p.HasStart && p.Cwd != "" {
			since.Open(time.UnixMilli(p.StartMs), tieSlack)
		}
	}
	for i := range regs {
		if r := &regs[i]; r.Verdict == regLive && r.Entrypoint == "cli" && r.StartedAt != 0 {
			since.Open(time.UnixMilli(r.StartedAt), tieSlack)
		}
	}
	return func(f *fileState) bool {
		return alive[f.ID] || now.Sub(f.Mtime) < midTurnRecent || since.Holds(f.Mtime)
	}
}
