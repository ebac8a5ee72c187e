package launch

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/launch/worktree"
	"github.com/agentctl/agentctl/meta"
)

// Slot is one agent of a matrix launch, with its worktree once prepared.
type Slot struct {
	Adapter, Model string
	Suffix         string       // unique within the group: cc, codex, cc-opus-4-6, codex-2, …
	Branch, Path   string       // try/<group>/<suffix> and <repo>-try-<group>-<suffix>
	Budget         *meta.Budget // the matrix entry's own limits, if any
	Background     bool         // a Claude Code background session (matrix `background: true`)
}

// ShortAdapter is an adapter's name in branch and path suffixes.
func ShortAdapter(name string) string {
	if s := agents.Get(name).Short; s != "" {
		return s
	}
	return name
}

var unsafeRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9-]+`) })

// ModelShort is a model's name in suffixes: no provider prefix, no "claude-",
// lower case, anything but letters, digits and '-' as '-'.
func ModelShort(model string) string {
	m := strings.ToLower(model)
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:]
	}
	m = strings.TrimPrefix(m, "claude-")
	m = strings.Trim(unsafeRef().ReplaceAllString(m, "-"), "-")
	if m == "" {
		m = "default"
	}
	return m
}

// AssignSuffixes names the slots: the short adapter name, plus "-<model short
// name>" when the adapter appears more than once, de-duplicated with -2, -3.
func AssignSuffixes(slots []Slot) {
	count := map[string]int{}
	for _, s := range slots {
		count[s.Adapter]++
	}
	used := map[string]bool{}
	for i := range slots {
		base := ShortAdapter(slots[i].Adapter)
		if count[slots[i].Adapter] > 1 && slots[i].Model != "" {
			base += "-" + ModelShort(slots[i].Model)
		}
		suf := base
		for n := 2; used[suf]; n++ {
			suf = base + "-" + strconv.Itoa(n)
		}
		used[suf] = true
		slots[i].Suffix = suf
	}
}

// Group is a comparison group: its agents, each with its worktree.
type Group = worktree.GroupOf[Slot]

// PrepareGroup names the slots (AssignSuffixes) and makes their worktrees
// (worktree.PrepareGroup): all or nothing.
func PrepareGroup(ctx context.Context, repo, baseRef string, slots []Slot) (*Group, error) {
	named := append([]Slot(nil), slots...)
	AssignSuffixes(named)
	wg, err := worktree.PrepareGroup(ctx, repo, baseRef, worktreeSlots(named))
	if err != nil {
		return nil, err
	}
	for i := range named {
		named[i].Branch, named[i].Path = wg.Slots[i].Branch, wg.Slots[i].Path
	}
	return &Group{ID: wg.ID, Repo: wg.Repo, Base: wg.Base, BaseRef: wg.BaseRef, Slots: named}, nil
}

// RemoveSlots force-removes the worktrees and branches of slots that never ran.
func RemoveSlots(top string, slots []Slot) []error {
	return worktree.RemoveSlots(top, worktreeSlots(slots))
}

func worktreeSlots(slots []Slot) []worktree.Slot {
	ws := make([]worktree.Slot, len(slots))
	for i, s := range slots {
		ws[i] = worktree.Slot{Suffix: s.Suffix, Label: s.Adapter, Branch: s.Branch, Path: s.Path}
	}
	return ws
}
