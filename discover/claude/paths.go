package claude

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
)

// Root is Claude's config root: $CLAUDE_CONFIG_DIR when set and non-empty (it
// relocates everything, independently of HOME), else ~/.claude.
func Root(env *discover.Env) string {
	if d := env.LookupEnv("CLAUDE_CONFIG_DIR"); d != "" {
		return env.ExpandHome(d)
	}
	return filepath.Join(env.Home, ".claude")
}

// isUUID reports whether s is UUID-shaped (8-4-4-4-12 hex digits, either
// case); uuidPrefix whether s can start one. Table-driven: they run once per
// transcript on every listing.
func isUUID(s string) bool     { return discover.IsUUIDAnyCase(s) }
func uuidPrefix(s string) bool { return discover.UUIDPrefix(s) }

// sessionIDOf returns the session id of a transcript file name, or "" when the
// file is not a session transcript (agent-*.jsonl, sessions-index.json, …).
func sessionIDOf(name string) string {
	id, ok := strings.CutSuffix(name, ".jsonl")
	if !ok || !isUUID(id) {
		return ""
	}
	return id
}

// transcript is one <root>/projects/<slug>/<uuid>.jsonl.
type transcript struct {
	ID   string
	Path string
	// HasDir: a <uuid>/ folder sits next to the transcript (it may hold the
	// session's subagents/agent-*.jsonl; docs/agents/claude-code.md §3.1).
	HasDir bool
}

// bucketNames lists the project directories (and symlinks, which may point to
// one) in dir; a missing dir has none.
func bucketNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ents))
	for _, b := range ents {
		if b.IsDir() || b.Type()&fs.ModeSymlink != 0 {
			out = append(out, b.Name())
		}
	}
	return out, nil
}

// findTranscripts stats the transcripts of the sessions q names, in every bucket:
// full ids are stat'ed by name; a shorter prefix lists the buckets (names only)
// and stats the matches. Like listAndStat, it skips what vanished or is not a file.
// unreadable are the errors of folders or names that could not be stat'ed for
// another reason than being gone.
func findTranscripts(root string, q discover.Query) (files []*fileState, unreadable []error, err error) {
	dir := filepath.Join(root, "projects")
	var exact []string
	for _, id := range append([]string{q.Prefix}, q.IDs...) {
		if isUUID(id) && !slices.Contains(exact, id) {
			exact = append(exact, id)
		}
	}
	scanNames := q.Prefix != "" && !isUUID(q.Prefix) && uuidPrefix(q.Prefix)
	if !scanNames {
		return statTranscripts(dir, exact)
	}
	buckets, err := bucketNames(dir)
	if err != nil || len(buckets) == 0 {
		return nil, nil, err
	}
	var out []*fileState
	add := func(bdir, name, id string) {
		path := bdir + string(filepath.Separator) + name
		stamp, regular, err := index.StatPath(path)
		if err == nil && regular {
			out = append(out, &fileState{transcript: transcript{ID: id, Path: path, HasDir: true}, Stamp: stamp, Mtime: time.Unix(0, stamp.MtimeNs)})
		}
	}
	for _, b := range buckets {
		bdir := filepath.Join(dir, b)
		names, err := readNames(bdir)
		if err != nil {
			if !missingFolder(err) {
				unreadable = append(unreadable, err)
			}
			continue
		}
		for _, name := range names {
			if id := sessionIDOf(name); id != "" && q.Match(id) {
				add(bdir, name, id)
			}
		}
	}
	return out, unreadable, nil
}

// statTranscripts stats <bucket>/<id>.jsonl for every bucket of dir and every
// id, relative to dir (the kernel walks two names per stat, not the whole
// path): the transcripts that exist, in bucket order. The buckets are dir's
// names: one that is not a folder has no transcript to stat.
func statTranscripts(dir string, ids []string) (out []*fileState, unreadable []error, err error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	d, err := index.OpenDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	buckets, err := d.Names()
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(buckets)
	for _, b := range buckets {
		for _, id := range ids {
			rel := b + "/" + id + ".jsonl"
			stamp, regular, err := d.Stat(rel)
			if err != nil && !missingFolder(err) {
				unreadable = append(unreadable, err)
			}
			if err == nil && regular {
				path := dir + string(filepath.Separator) + b + string(filepath.Separator) + id + ".jsonl"
				out = append(out, &fileState{transcript: transcript{ID: id, Path: path, HasDir: true}, Stamp: stamp, Mtime: time.Unix(0, stamp.MtimeNs)})
			}
		}
	}
	return out, unreadable, nil
}

// findTranscript locates a session's transcript by id: a glob over every bucket.
// Several hits only happen through manual copies; the newest wins.
func findTranscript(root, id string) (string, error) {
	if sessionIDOf(id+".jsonl") == "" {
		return "", nil
	}
	hits, err := filepath.Glob(filepath.Join(root, "projects", "*", id+".jsonl"))
	if err != nil || len(hits) == 0 {
		return "", err
	}
	best, bestT := "", int64(0)
	for _, h := range hits {
		st, err := os.Stat(h)
		if err != nil {
			continue
		}
		if t := st.ModTime().UnixNano(); best == "" || t > bestT {
			best, bestT = h, t
		}
	}
	return best, nil
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
