package pi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unsafe"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/dirnames"
	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/jsonl"
)

// root is one place session files live.
type root struct {
	Dir string
	// Flat: files directly in Dir only (a custom session dir). Otherwise Dir is a
	// sessions root: Dir/<slug>/*.jsonl plus Dir/*.jsonl.
	Flat bool
	// Why names the setting the root came from, for warnings.
	Why string
}

// agentDir is <A> of docs/agents/pi.md §1 as agentctl's own environment defines it.
func agentDir(env *discover.Env) string {
	if d := env.LookupEnv("PI_CODING_AGENT_DIR"); d != "" {
		return env.ExpandHome(d)
	}
	return filepath.Join(env.Home, ".pi", "agent")
}

// roots lists every place to scan (docs/agents/pi.md §1 "What agentctl scans", §9 for pi-rust),
// de-duplicated.
func roots(env *discover.Env) []root {
	a := agentDir(env)
	rs := []root{{Dir: filepath.Join(a, "sessions"), Why: "agent dir " + a}}
	if d := env.LookupEnv("PI_CODING_AGENT_SESSION_DIR"); d != "" {
		rs = append(rs, root{Dir: env.ExpandHome(d), Flat: true, Why: "PI_CODING_AGENT_SESSION_DIR"})
	}
	if d := env.LookupEnv("PI_SESSIONS_DIR"); d != "" { // pi-rust
		rs = append(rs, root{Dir: env.ExpandHome(d), Why: "PI_SESSIONS_DIR"})
	}
	// settings.json sessionDir: absolute or ~ only. A relative one is resolved
	// against each pi process's cwd and cannot be found globally.
	if d := settingsSessionDir(env, a); d != "" {
		rs = append(rs, root{Dir: d, Flat: true, Why: "sessionDir in " + filepath.Join(a, "settings.json")})
	}
	for _, l := range env.Launches {
		if l.Adapter != Name && l.Adapter != NameRust {
			continue
		}
		if d := argValue(l.Argv, "--session-dir"); d != "" {
			if !filepath.IsAbs(d) {
				d = filepath.Join(l.Cwd, d)
			}
			rs = append(rs, root{Dir: env.ExpandHome(d), Flat: true, Why: "launch record " + l.ID})
		}
	}
	seen := map[string]bool{}
	out := rs[:0]
	for _, r := range rs {
		r.Dir = filepath.Clean(r.Dir)
		k := r.Dir
		if r.Flat {
			k += "\x00flat"
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, r)
	}
	return out
}

// settingsSessionDir returns the global settings' sessionDir when it can be found
// from anywhere (absolute or ~).
func settingsSessionDir(env *discover.Env, agent string) string {
	b, err := agentfs.ReadFile(filepath.Join(agent, "settings.json"))
	if err != nil {
		return ""
	}
	var s struct {
		SessionDir string `json:"sessionDir"`
	}
	if json.Unmarshal(b, &s) != nil || s.SessionDir == "" {
		return ""
	}
	d := env.ExpandHome(s.SessionDir)
	if !filepath.IsAbs(d) {
		return ""
	}
	return d
}

// argValue returns the value of --flag V or --flag=V in argv.
func argValue(argv []string, flag string) string {
	for i, a := range argv {
		if a == flag && i+1 < len(argv) {
			return argv[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// listFiles returns the .jsonl files under the roots, each path once. Missing
// roots are normal (pi never ran, or not with that setting); unreadable ones are
// warned about.
//
// A lookup (keep set) reads the session folders' names through kept, which
// keeps them between commands (discover/dirnames): its cost then does not grow
// with the history.
func listFiles(env *discover.Env, rs []root, keep func(name string) bool, prefixes []string, kept *dirnames.Cache) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	readDir := func(dir string) []fs.DirEntry {
		ents, err := os.ReadDir(dir)
		warnDir(env, dir, err)
		return ents
	}
	for _, r := range rs {
		for _, e := range readDir(r.Dir) {
			p := filepath.Join(r.Dir, e.Name())
			if isJSONL(e.Name()) && !isDir(e, p) {
				if keep == nil || keep(e.Name()) {
					add(p)
				}
				continue
			}
			if r.Flat || !isDir(e, p) {
				continue // session-index.sqlite, .lock, …
			}
			if keep != nil {
				// A lookup: only the names keep wants become strings (dirnames, index.EachName).
				var names []string
				_, err := kept.EachMatch(p, prefixes, func(b []byte, kind index.EntryKind) {
					name := unsafe.String(unsafe.SliceData(b), len(b)) // a view, used only here
					if kind != index.KindDir && isJSONL(name) && keep(name) {
						names = append(names, string(b))
					}
				})
				warnDir(env, p, err)
				sort.Strings(names)
				for _, n := range names {
					add(filepath.Join(p, n))
				}
				continue
			}
			for _, f := range readDir(p) {
				if isJSONL(f.Name()) && !f.IsDir() {
					add(filepath.Join(p, f.Name()))
				}
			}
		}
	}
	return out
}

// warnDir warns about a directory that could not be read (a missing one is normal).
func warnDir(env *discover.Env, dir string, err error) {
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
		env.Warnf("cannot read %s: %v", dir, err)
	} else if errors.Is(err, fs.ErrPermission) {
		env.Warnf("cannot read %s: permission denied; its sessions are missing", dir)
	}
}

func isJSONL(name string) bool {
	return strings.HasSuffix(name, ".jsonl") && !strings.HasPrefix(name, ".")
}

func isDir(e fs.DirEntry, p string) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink != 0 {
		st, err := os.Stat(p)
		return err == nil && st.IsDir()
	}
	return false
}

// flavour classifies a file as pi or pi-rust (docs/agents/pi.md §9): by the file name's id part
// first, then by header model fields (which only pi-rust writes).
func flavour(path string, h header) string {
	base := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	if _, suffix, ok := strings.Cut(base, "_"); ok {
		switch {
		case suffix == h.ID:
			return Name
		case len(suffix) == 8 && strings.HasPrefix(h.ID, suffix):
			return NameRust
		}
	}
	if h.Provider != "" || h.ModelID != "" {
		return NameRust
	}
	return Name
}

// findFile looks for a session's file by id when the session came from a launch
// record only (the core synthesises those without a path).
func findFile(env *discover.Env, id string) string {
	if id == "" {
		return ""
	}
	for _, p := range listFiles(env.WithWarn(nil), roots(env), nil, nil, nil) {
		base := strings.TrimSuffix(filepath.Base(p), ".jsonl")
		_, suffix, ok := strings.Cut(base, "_")
		if ok && (suffix == id || (len(suffix) == 8 && strings.HasPrefix(id, suffix))) {
			if h, ok := readHeader(p); ok && h.ID == id {
				return p
			}
		}
	}
	return ""
}

// readHeader reads line 1 with one small read.
func readHeader(path string) (header, bool) {
	f, err := agentfs.Open(path)
	if err != nil {
		return header{}, false
	}
	defer f.Close()
	var s summary
	buf := make([]byte, 4096)
	n, _ := f.Read(buf)
	if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
		s.feed(buf[:i])
		return s.Header, s.HeaderOK
	}
	// A header longer than 4 KiB (a long cwd): read the line properly.
	if _, err := f.Seek(0, 0); err != nil {
		return header{}, false
	}
	_, _, _ = jsonl.Read(f, 0, func(line []byte, _ int64) error {
		s.feed(line)
		return errStop
	})
	return s.Header, s.HeaderOK
}

var errStop = errors.New("stop")
