// Package agents is the one list of the agents agentctl knows: the names users
// type (--adapter, launch ADAPTER) and sessions carry, in display order, and
// which read-side adapter reports each (pi-rust sessions share pi's session
// tree, so the pi adapter reports both), with the facts about each that other
// layers would otherwise switch on: its binary, its variable and install hint,
// its doc page and labels, and what it can do (resume, fork, background,
// send). Adding an agent is a format parser (discover/<agent>), a driver
// (launch) and a row here. It sits below discover, launch and the
// commands, importing nothing of theirs, so that all three read the same list;
// the constructors stay with the types they build — discover adapters in the
// command's composition root, launch drivers in launch — each pinned to this
// list by a test.
package agents

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/internal/suggest"
)

// Agent is one name a session can carry, and the facts about it that are not
// code: the commands read them here instead of switching on the name.
type Agent struct {
	Name string
	// Reader is the read-side adapter that reports these sessions: Name itself,
	// or the adapter it is a sub-adapter of (whose data dir it then shares).
	Reader string
	// Doc is the page that documents the agent: docs/agents/<Doc>.md.
	Doc string
	// Label is who speaks for the agent in peek's transcript ("claude").
	Label string
	// Short is the agent's name in group branch and worktree suffixes ("cc").
	Short string

	// BinEnv is the variable that overrides the agent's binary
	// (AGENTCTL_CLAUDE_BIN); "" for an agent not started from a local binary.
	BinEnv string
	// Binary is the name looked up on $PATH.
	Binary string
	// Install says how to get the binary, as a clause of an error message.
	Install string
	// Gateway: the agent runs on a gateway (OpenClaw), in the gateway's
	// workspace rather than a directory agentctl chooses, and may be set up
	// (a URL in config) without any local state.
	Gateway bool

	// TestedOldest and TestedNewest are the oldest and newest versions of the
	// agent agentctl's end-to-end suite ran against (e2e/npm pins them); ""
	// when no real binary is tested. doctor notes an installed version outside
	// them.
	TestedOldest, TestedNewest string

	// Capabilities.
	Launch     bool // launch starts it (it has a driver in launch/); else agentctl only reads its sessions
	Resume     bool // resume ID MESSAGE continues a session
	Fork       bool // resume --fork copies a session into a new one
	Background bool // launch --background: a session the agent's own daemon hosts
	KeepOpen   bool // launch --keep-open: the run stays open for send (the agent's RPC input)
	Send       bool // send ID MESSAGE reaches its live sessions, proven end to end (README "Send")
}

// All returns every agent in display order (a fresh slice: nothing to mutate).
func All() []Agent {
	return []Agent{
		{Name: "claude-code", Reader: "claude-code", Doc: "claude-code", Label: "claude", Short: "cc",
			BinEnv: "AGENTCTL_CLAUDE_BIN", Binary: "claude", Install: "install Claude Code (npm i -g @anthropic-ai/claude-code)",
			TestedOldest: "2.1.197", TestedNewest: "2.1.332",
			Launch: true, Resume: true, Fork: true, Background: true, Send: true},
		{Name: "codex", Reader: "codex", Doc: "codex", Label: "codex", Short: "codex",
			BinEnv: "AGENTCTL_CODEX_BIN", Binary: "codex", Install: "install it (npm i -g @openai/codex)",
			TestedOldest: "0.169.0", TestedNewest: "0.171.0",
			Launch: true, Resume: true, Send: true},
		{Name: "opencode", Reader: "opencode", Doc: "opencode", Label: "opencode", Short: "opencode",
			BinEnv: "AGENTCTL_OPENCODE_BIN", Binary: "opencode", Install: "install it (npm i -g opencode-ai)",
			TestedOldest: "1.18.33", TestedNewest: "1.18.33",
			Launch: true, Resume: true, Send: true},
		{Name: "pi", Reader: "pi", Doc: "pi", Label: "pi", Short: "pi",
			BinEnv: "AGENTCTL_PI_BIN", Binary: "pi", Install: "install it (npm i -g @earendil-works/pi-coding-agent)",
			TestedOldest: "0.73.1", TestedNewest: "1.6.0",
			Launch: true, Resume: true, KeepOpen: true, Send: true},
		// pi-rust is looked up by that name only: upstream builds its binary as
		// `pi` too, which would find the TypeScript pi.
		{Name: "pi-rust", Reader: "pi", Doc: "pi", Label: "pi", Short: "pi-rs",
			BinEnv: "AGENTCTL_PI_RUST_BIN", Binary: "pi-rust", Install: "install pi-rust (as pi-rust on $PATH)",
			Launch: true, Resume: true},
		{Name: "openclaw", Reader: "openclaw", Doc: "openclaw", Label: "openclaw", Short: "openclaw",
			TestedOldest: "2026.9.6", TestedNewest: "2026.9.6",
			Gateway: true, Launch: true, Resume: true},
		{Name: "gemini", Reader: "gemini", Doc: "gemini", Label: "gemini", Short: "gemini",
			BinEnv: "AGENTCTL_GEMINI_BIN", Binary: "gemini", Install: "install it (npm i -g @google/gemini-cli)",
			TestedOldest: "0.61.0", TestedNewest: "0.61.0",
			Launch: true, Resume: true, Send: true},
		{Name: "qwen-code", Reader: "qwen-code", Doc: "qwen", Label: "qwen", Short: "qwen",
			BinEnv: "AGENTCTL_QWEN_BIN", Binary: "qwen", Install: "install it (npm i -g @qwen-code/qwen-code)",
			TestedOldest: "0.24.4", TestedNewest: "0.24.4",
			Launch: true, Resume: true, Send: true},
		{Name: "copilot", Reader: "copilot", Doc: "copilot", Label: "copilot", Short: "copilot",
			BinEnv: "AGENTCTL_COPILOT_BIN", Binary: "copilot", Install: "install it (npm i -g @github/copilot)",
			TestedOldest: "1.0.102", TestedNewest: "1.0.102",
			Launch: true, Resume: true, Send: true},
	}
}

// Get returns name's row; the zero Agent (no capabilities) if name is unknown.
func Get(name string) Agent {
	for _, a := range All() {
		if a.Name == name {
			return a
		}
	}
	return Agent{}
}

// Names lists every agent name in display order.
func Names() []string {
	var out []string
	for _, a := range All() {
		out = append(out, a.Name)
	}
	return out
}

// Known reports whether name is an agent name.
func Known(name string) bool { return ReaderOf(name) != "" }

// ReaderOf is the read-side adapter that reports name's sessions ("" if unknown).
func ReaderOf(name string) string { return Get(name).Reader }

// Readers lists the read-side adapters in display order.
func Readers() []string {
	var out []string
	for _, a := range All() {
		if a.Reader == a.Name {
			out = append(out, a.Name)
		}
	}
	return out
}

// SubsOf lists the names reader reports besides its own (pi: pi-rust).
func SubsOf(reader string) []string {
	var out []string
	for _, a := range All() {
		if a.Reader == reader && a.Name != reader {
			out = append(out, a.Name)
		}
	}
	return out
}

// UnknownError is the error for a name that is not an agent's: it lists them,
// and names the nearest when name looks like a typo of one ("claude").
func UnknownError(name string) error {
	var names [][]string
	for _, n := range Names() {
		names = append(names, []string{n})
	}
	msg := fmt.Sprintf("unknown adapter %q; known adapters: %s", name, strings.Join(Names(), ", "))
	if near := suggest.Closest(name, names); near != "" {
		msg += fmt.Sprintf("; did you mean %q?", near)
	}
	return errors.New(msg)
}
