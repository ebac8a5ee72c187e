package claude

import (
	"fmt"
	"time"

	"github.com/agentctl/agentctl/discover"
)

// Ages used by the tail rules (docs/agents/claude-code.md §4.3).
const (
	openStopAge   = 5 * time.Second  // assistant text with stop_reason null is final after this
	waitingAge    = 60 * time.Second // an unanswered tool_use in a TUI is probably a permission prompt
	midTurnRecent = 60 * time.Second // a mid-turn transcript this fresh may still have a writer elsewhere
	// A prompt in history.jsonl newer than an idle registry entry is a turn
	// starting for this long; after it the registry is believed again (a
	// prompt Claude never runs, say one a hook rejects, is running at most this).
	promptPendingAge = 5 * time.Second
)

// liveInput is what the sub-state of a live session is derived from.
type liveInput struct {
	RegStatus  string // registry status ("" when absent)
	WaitingFor string
	Print      bool       // a -p process: running until it exits
	Entrypoint string     // cli = TUI
	Agg        *aggregate // nil: no transcript yet
	Now        time.Time
}

// subState works out running/idle/waiting for a session whose process is alive:
// the first rule that applies wins. inferred is true when the answer is a guess.
func subState(in liveInput) (status, detail string, inferred bool) {
	switch in.RegStatus {
	case "busy", "working":
		return discover.StatusRunning, "", false
	case "idle", "shell", "done", "stopped", "failed":
		return discover.StatusIdle, "", false
	case "waiting", "blocked":
		return discover.StatusWaiting, in.WaitingFor, false
	}
	if in.Print {
		return discover.StatusRunning, "", false
	}
	a := in.Agg
	tui := in.Entrypoint == "cli"
	if a == nil || (a.Last.Kind == tailNone && a.LastTurnEnd == 0) {
		if tui {
			return discover.StatusIdle, "no prompt yet", false
		}
		return discover.StatusRunning, "", false
	}
	if a.LastTurnEnd != 0 && a.LastTurnEnd >= a.Last.TS {
		return discover.StatusIdle, "", false
	}
	age := in.Now.Sub(time.UnixMilli(a.Last.TS))
	switch a.Last.Kind {
	case tailEnd, tailAPIError, tailInterrupted:
		return discover.StatusIdle, "", false
	case tailOpen:
		if age > openStopAge {
			return discover.StatusIdle, "", false
		}
		return discover.StatusRunning, "", false
	case tailToolUse:
		if tui && in.RegStatus == "" && a.permissionMode() != "bypassPermissions" && age > waitingAge {
			return discover.StatusWaiting, fmt.Sprintf("tool call unanswered for %s (inferred permission prompt)", age.Round(time.Second)), true
		}
	}
	return discover.StatusRunning, "", false
}

// permissionMode is the session's latest permission mode (docs/agents/claude-code.md §3).
func (a *aggregate) permissionMode() string {
	if a.PermMode != "" {
		return a.PermMode
	}
	return a.PromptPermMode
}

// midTurn reports whether the transcript ends inside a turn: a prompt, a tool
// result or an unanswered tool call is its last conversation record.
func (a *aggregate) midTurn() bool {
	if a.LastTurnEnd != 0 && a.LastTurnEnd >= a.Last.TS {
		return false
	}
	switch a.Last.Kind {
	case tailPrompt, tailToolResult, tailToolUse:
		return true
	}
	return false
}
