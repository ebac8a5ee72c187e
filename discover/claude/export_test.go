package claude

import (
	"context"
	"path/filepath"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
)

// listTranscripts returns every session transcript under root. Subagent
// directories (<uuid>/subagents/) and agent-*.jsonl are not sessions. A missing
// root or projects/ is an empty list: Claude may never have run here. Buckets that
// vanish while we read (Claude's cleanup deletes old files) are skipped.
func listTranscripts(root string) ([]transcript, error) {
	dir := filepath.Join(root, "projects")
	buckets, err := bucketNames(dir)
	if err != nil {
		return nil, err
	}
	var out []transcript
	for _, b := range buckets {
		bdir := filepath.Join(dir, b)
		names, err := readNames(bdir)
		if err != nil {
			continue // gone, or a symlink to something that is not a directory
		}
		for _, name := range names {
			// Directories named like transcripts are weeded out by the stat that
			// follows: names alone are cheaper to list.
			if id := sessionIDOf(name); id != "" {
				out = append(out, transcript{ID: id, Path: bdir + string(filepath.Separator) + name})
			}
		}
	}
	return out, nil
}

// Used by tests only: the listing goes through dirListing and load.

// scan returns the state of every transcript that still exists (statAll, then
// load).
func (s *scanner) scan(ctx context.Context, ts []transcript) ([]*fileState, []error) {
	return s.load(ctx, s.statAll(ctx, ts), true)
}

// statAll stats every transcript. Files that vanished meanwhile, and anything
// that is not a regular file, are skipped silently.
func (s *scanner) statAll(ctx context.Context, ts []transcript) []*fileState {
	states := make([]*fileState, len(ts))
	if !discover.Spread(ctx, len(ts), func(i int) {
		stamp, regular, err := index.StatPath(ts[i].Path)
		if err != nil || !regular {
			return // vanished between ReadDir and Stat (gone, not an error), or not a file
		}
		states[i] = &fileState{transcript: ts[i], Stamp: stamp, Mtime: time.Unix(0, stamp.MtimeNs)}
	}) {
		s.cut = true
	}
	out := states[:0]
	for _, f := range states {
		if f != nil {
			out = append(out, f)
		}
	}
	return out
}
