package claude

import "path/filepath"

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
