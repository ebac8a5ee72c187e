package gemini

import (
	"time"

	"github.com/agentctl/agentctl/discover"
)

// indexVersion is the parse index's version: bump it whenever what cached
// means changes (its shape is checked by the index itself).
const indexVersion = 1

// cached is what the parse index keeps of one session file while it is
// unchanged (same file, size and mtime): everything a listing takes from its
// summary, the latest turn's outcome already worked out. A file that changed
// is parsed again whole: Gemini's patch log restates and replaces messages by
// id, so resuming a parse would need the whole message list, and the files are
// tens of KB. Before it, every listing parsed every file (about 1.2 ms of CPU
// each on the development machine: docs/performance.md).
type cached struct {
	ID, ProjectHash, Kind string
	Start, Last           time.Time
	Model                 string
	Models                []string
	FirstPrompt           string
	RolledBack            bool
	Failed                failedTurn
	BadUsage, Bad, Lines  int
	Usage                 map[string]usage
	UsageOrder            []string
	Prompts               []string
	Outcome               discover.Outcome
	Detail                string
}

// outcomeOf is a summary's outcome as worked out when it was kept.
type outcomeOf struct {
	Outcome discover.Outcome
	Detail  string
}

// toCached is what the index keeps of s.
func toCached(s *summary) cached {
	c := cached{ID: s.ID, ProjectHash: s.ProjectHash, Kind: s.Kind, Start: s.Start, Last: s.Last, Model: s.Model,
		Models: s.Models, FirstPrompt: s.FirstPrompt, RolledBack: s.RolledBack, Failed: s.Failed,
		BadUsage: s.BadUsage, Bad: s.Bad, Lines: s.Lines, Usage: s.usage, UsageOrder: s.usageOrder}
	for id := range s.prompts {
		c.Prompts = append(c.Prompts, id)
	}
	c.Outcome, c.Detail = s.outcome()
	return c
}

// fromCached is the summary the index kept.
func fromCached(c cached) *summary {
	s := newSummary()
	s.ID, s.ProjectHash, s.Kind, s.Start, s.Last, s.Model = c.ID, c.ProjectHash, c.Kind, c.Start, c.Last, c.Model
	s.Models, s.FirstPrompt, s.RolledBack, s.Failed = c.Models, c.FirstPrompt, c.RolledBack, c.Failed
	s.BadUsage, s.Bad, s.Lines = c.BadUsage, c.Bad, c.Lines
	if c.Usage != nil {
		s.usage = c.Usage
	}
	s.usageOrder = c.UsageOrder
	for _, id := range c.Prompts {
		s.prompts[id] = true
	}
	s.kept = &outcomeOf{c.Outcome, c.Detail}
	return s
}
