// Package agents is the one list of the agents agentctl knows: the names users
// type (--adapter, launch ADAPTER) and sessions carry, in display order, and
// which read-side adapter reports each (pi-rust sessions share pi's session
// tree, so the pi adapter reports both). It sits below discover, launch and the
// commands, importing nothing of theirs, so that all three read the same list;
// the constructors stay with the types they build — discover adapters in the
// command's composition root, launch drivers in launch — each pinned to this
// list by a test.
package agents

import (
	"fmt"
	"strings"
)

// Agent is one name a session can carry.
type Agent struct {
	Name string
	// Reader is the read-side adapter that reports these sessions: Name itself,
	// or the adapter it is a sub-adapter of.
	Reader string
}

// All returns every agent in display order (a fresh slice: nothing to mutate).
func All() []Agent {
	return []Agent{
		{"claude-code", "claude-code"},
		{"codex", "codex"},
		{"opencode", "opencode"},
		{"pi", "pi"},
		{"pi-rust", "pi"},
		{"openclaw", "openclaw"},
	}
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
func ReaderOf(name string) string {
	for _, a := range All() {
		if a.Name == name {
			return a.Reader
		}
	}
	return ""
}

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

// UnknownError is the error for a name that is not an agent's: it lists them.
func UnknownError(name string) error {
	return fmt.Errorf("unknown adapter %q; known adapters: %s", name, strings.Join(Names(), ", "))
}
