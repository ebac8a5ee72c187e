package qwen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/agentfs"
)

// Env overrides the CLI honours (docs/agents/qwen.md §1).
const (
	// EnvHome replaces ~/.qwen: settings, the sessions/ registry, usage ledgers,
	// and (unless relocated) projects/.
	EnvHome = "QWEN_HOME"
	// EnvRuntimeDir relocates the runtime base (projects/, tmp/); it wins over
	// the advanced.runtimeOutputDir setting.
	EnvRuntimeDir = "QWEN_RUNTIME_DIR"
)

// resolve expands ~ against the env's home and makes a relative path absolute,
// as the CLI's Storage.resolvePath does (relative to the working directory).
func resolve(env *discover.Env, p string) string {
	switch {
	case p == "~":
		p = env.Home
	case strings.HasPrefix(p, "~/"):
		p = filepath.Join(env.Home, p[2:])
	}
	if !filepath.IsAbs(p) {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
	}
	return filepath.Clean(p)
}

// qwenDir is the CLI's global dir: $QWEN_HOME, else ~/.qwen.
func qwenDir(env *discover.Env) string {
	if d := env.LookupEnv(EnvHome); d != "" {
		return resolve(env, d)
	}
	return filepath.Join(env.Home, ".qwen")
}

// runtimeDir is where projects/<p>/chats live: $QWEN_RUNTIME_DIR, else the
// global settings' advanced.runtimeOutputDir when it is absolute or ~-based (a
// relative one is per project, resolved against each project root: not
// followed), else the global dir.
func runtimeDir(env *discover.Env) string {
	if d := env.LookupEnv(EnvRuntimeDir); d != "" {
		return resolve(env, d)
	}
	home := qwenDir(env)
	b, err := agentfs.ReadFile(filepath.Join(home, "settings.json"))
	if err == nil {
		var s struct {
			Advanced struct {
				RuntimeOutputDir string `json:"runtimeOutputDir"`
			} `json:"advanced"`
		}
		if json.Unmarshal(b, &s) == nil {
			d := s.Advanced.RuntimeOutputDir
			if filepath.IsAbs(d) || d == "~" || strings.HasPrefix(d, "~/") {
				return resolve(env, d)
			}
		}
	}
	return home
}

// chatRoots are the projects/ dirs to scan: the runtime dir's, and the global
// dir's when the runtime dir is relocated (sessions written before the move).
func chatRoots(env *discover.Env) []string {
	rt, home := runtimeDir(env), qwenDir(env)
	roots := []string{filepath.Join(rt, "projects")}
	if rt != home {
		roots = append(roots, filepath.Join(home, "projects"))
	}
	return roots
}

// chatFile is a candidate transcript: projects/<p>/chats/<sessionId>.jsonl.
type chatFile struct {
	Path string
	Name string // the file name without .jsonl: the session id
}

// listChats lists the transcripts under the roots whose name keep accepts
// (nil: all). It reads directories only, never a file.
func listChats(roots []string, keep func(name string) bool) []chatFile {
	var out []chatFile
	for _, root := range roots {
		projects, err := os.ReadDir(root)
		if err != nil {
			continue
		}
		for _, p := range projects {
			if !p.IsDir() {
				continue
			}
			dir := filepath.Join(root, p.Name(), "chats")
			ents, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range ents {
				name, ok := strings.CutSuffix(e.Name(), ".jsonl")
				if !ok || name == "" || !e.Type().IsRegular() {
					continue
				}
				if keep != nil && !keep(name) {
					continue
				}
				out = append(out, chatFile{Path: filepath.Join(dir, e.Name()), Name: name})
			}
		}
	}
	return out
}

// registryName is a live-session record's file name: <pid>.json, or
// <pid>-<8 hex>.json for a process hosting several sessions (ACP).
var registryName = regexp.MustCompile(`^(\d+)(-[0-9a-f]{8})?\.json$`)

// regEntry is one ~/.qwen/sessions/<pid>.json record.
type regEntry struct {
	SchemaVersion int    `json:"schemaVersion"`
	PID           int    `json:"pid"`
	ProcStart     string `json:"procStart"` // <boot id>:<field 22 of /proc/<pid>/stat>
	SessionID     string `json:"sessionId"`
	Cwd           string `json:"cwd"`
	StartedAt     int64  `json:"startedAt"` // ms
	QwenVersion   string `json:"qwenVersion"`
	Kind          string `json:"kind"`

	File string `json:"-"`
}

// readRegistry reads every record of the live-session registry. A record that
// does not parse, or whose pid disagrees with its file name, is skipped.
func readRegistry(env *discover.Env) []regEntry {
	dir := filepath.Join(qwenDir(env), "sessions")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []regEntry
	for _, e := range ents {
		m := registryName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		b, err := agentfs.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || len(b) > 64<<10 {
			continue
		}
		var r regEntry
		if json.Unmarshal(b, &r) != nil || r.SessionID == "" || r.PID <= 0 {
			continue
		}
		if pid, err := strconv.Atoi(m[1]); err != nil || pid != r.PID {
			continue
		}
		if r.Kind == "" {
			r.Kind = "tui"
		}
		r.File = filepath.Join(dir, e.Name())
		out = append(out, r)
	}
	return out
}

// procStart splits procStart into the boot id and the start ticks.
func (r regEntry) procStart() (boot string, ticks uint64, ok bool) {
	i := strings.LastIndexByte(r.ProcStart, ':')
	if i <= 0 {
		return "", 0, false
	}
	t, err := strconv.ParseUint(r.ProcStart[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return r.ProcStart[:i], t, true
}
