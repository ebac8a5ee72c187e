package opencode

import (
	"os"
	"path/filepath"
	"sort"

	"github.com/agentctl/agentctl/discover"
)

// dataDir is OpenCode's data dir (docs/agents/opencode.md §1): $XDG_DATA_HOME/opencode, else
// ~/.local/share/opencode, on macOS too. A relative XDG_DATA_HOME is invalid per
// the XDG spec and ignored, as OpenCode's xdg-basedir does.
func dataDir(env *discover.Env) string {
	if x := env.LookupEnv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "opencode")
	}
	return filepath.Join(env.Home, ".local", "share", "opencode")
}

// dbPaths lists the SQLite stores to read (docs/agents/opencode.md §1 "DB path"):
// OPENCODE_DB wins (":memory:" means nothing on disk; relative means under the
// data dir); else <data>/opencode.db when it exists; else every <data>/opencode*.db
// (the release channel is compiled into the binary, and asking the binary costs a
// ~2 s process start, which a listing must not pay).
func dbPaths(env *discover.Env, data string) []string {
	if v := env.LookupEnv("OPENCODE_DB"); v != "" {
		switch {
		case v == ":memory:":
			return nil
		case !filepath.IsAbs(v):
			v = filepath.Join(data, v)
		}
		if isFile(v) {
			return []string{v}
		}
		return nil
	}
	main := filepath.Join(data, "opencode.db")
	if isFile(main) {
		return []string{main}
	}
	matches, _ := filepath.Glob(filepath.Join(data, "opencode*.db"))
	var out []string
	for _, m := range matches {
		if isFile(m) {
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
