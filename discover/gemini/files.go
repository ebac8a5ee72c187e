package gemini

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/agentfs"
)

// EnvHome is Gemini CLI's own override of its home: the CLI then uses
// $GEMINI_CLI_HOME/.gemini instead of ~/.gemini.
const EnvHome = "GEMINI_CLI_HOME"

// geminiHome is the home the CLI puts .gemini in, as env defines it.
func geminiHome(env *discover.Env) string {
	if h := env.LookupEnv(EnvHome); h != "" {
		return env.ExpandHome(h)
	}
	return env.Home
}

// geminiDir is the CLI's data dir as env defines it.
func geminiDir(env *discover.Env) string { return filepath.Join(geminiHome(env), ".gemini") }

// runtimeDirs are the dirs whose tmp/ holds sessions: the data dir, and
// ~/.cache/.gemini, the CLI's runtime dir inside its macOS seatbelt sandbox
// (SANDBOX=sandbox-exec; Storage.getGlobalRuntimeDir).
func runtimeDirs(env *discover.Env) []string {
	return []string{geminiDir(env), filepath.Join(geminiHome(env), ".cache", ".gemini")}
}

// DataDir is where the agent keeps the files this adapter reads (discover.DataDirer).
func (a *Adapter) DataDir(env *discover.Env) string { return geminiDir(env) }

// sessionFile is one chats/session-*.json[l] file and the project it is in.
type sessionFile struct {
	Path    string
	Dir     string // the runtime dir it is under
	Project string // the project dir name under tmp/ (a slug, or an older CLI's sha256)
	ID8     string // the id prefix the file name carries ("" when it has none)
}

// nameRE is session-<YYYY-MM-DDTHH-MM>-<id8>.json[l].
var nameRE = regexp.MustCompile(`^session-.*-([0-9a-fA-F]{8})\.jsonl?$`)

// listFiles returns every session file under tmp/*/chats (subagent transcripts
// sit one level deeper, under chats/<parent id>/, and are not sessions).
func listFiles(dir string) []sessionFile {
	var out []sessionFile
	projects, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil {
		return nil
	}
	for _, p := range projects {
		if !p.IsDir() {
			continue
		}
		chats := filepath.Join(dir, "tmp", p.Name(), "chats")
		ents, err := os.ReadDir(chats)
		if err != nil {
			continue
		}
		for _, e := range ents {
			name := e.Name()
			if !e.Type().IsRegular() || !strings.HasPrefix(name, "session-") ||
				!(strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".json")) {
				continue
			}
			f := sessionFile{Path: filepath.Join(chats, name), Dir: dir, Project: p.Name()}
			if m := nameRE.FindStringSubmatch(name); m != nil {
				f.ID8 = strings.ToLower(m[1])
			}
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// mayHold reports whether a file's name allows a session q names: the name
// carries the id's first 8 characters; a name without them may hold any id.
func (f sessionFile) mayHold(q *discover.Query) bool {
	if q == nil || f.ID8 == "" {
		return true
	}
	if p := strings.ToLower(q.Prefix); p != "" {
		n := min(len(p), 8)
		if p[:n] == f.ID8[:n] {
			return true
		}
	}
	for _, id := range q.IDs {
		if len(id) >= 8 && strings.ToLower(id[:8]) == f.ID8 {
			return true
		}
	}
	return false
}

// roots maps project dir names to project roots, read once per listing:
// tmp/<slug>/.project_root, else a reverse lookup in projects.json, and for an
// older CLI's sha256-named dir the project whose path hashes to it.
type roots struct {
	dir     string
	byName  map[string]string
	byHash  map[string]string
	loaded  bool
	fromCfg map[string]string // slug → root (projects.json)
}

func newRoots(dir string) *roots { return &roots{dir: dir, byName: map[string]string{}} }

func (r *roots) load() {
	if r.loaded {
		return
	}
	r.loaded = true
	r.fromCfg = map[string]string{}
	r.byHash = map[string]string{}
	b, err := agentfs.ReadFile(filepath.Join(r.dir, "projects.json"))
	if err != nil {
		return
	}
	var pj struct {
		Projects map[string]json.RawMessage `json:"projects"`
	}
	if json.Unmarshal(b, &pj) != nil {
		return
	}
	for root, raw := range pj.Projects {
		slug := str(raw)
		if slug != "" {
			r.fromCfg[slug] = root
		}
		r.byHash[hashOf(root)] = root
	}
}

func hashOf(root string) string {
	h := sha256.Sum256([]byte(root))
	return hex.EncodeToString(h[:])
}

// root returns the project root of a project dir, checked against the
// session's projectHash when it has one ("" when unknown).
func (r *roots) root(project, projectHash string) string {
	root, ok := r.byName[project]
	if !ok {
		if b, err := agentfs.ReadFile(filepath.Join(r.dir, "tmp", project, ".project_root")); err == nil {
			root = strings.TrimSpace(string(b))
		}
		if root == "" {
			r.load()
			root = r.fromCfg[project]
			if root == "" {
				root = r.byHash[strings.ToLower(project)]
			}
		}
		r.byName[project] = root
	}
	if root != "" && projectHash != "" && !strings.EqualFold(hashOf(root), projectHash) {
		// The slug was reused for another path: trust the hash if it names a project.
		r.load()
		if other := r.byHash[strings.ToLower(projectHash)]; other != "" {
			return other
		}
	}
	if root == "" && projectHash != "" {
		r.load()
		root = r.byHash[strings.ToLower(projectHash)]
	}
	return root
}
