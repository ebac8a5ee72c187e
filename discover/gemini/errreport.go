package gemini

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/internal/agentfs"
)

// Gemini CLI writes no error into the session when a request fails: it rolls
// the prompt back and writes an error report to os.tmpdir(), outside its home
// (docs/agents/gemini.md "What 429 and 401 leave on disk"):
//
//	$TMPDIR/gemini-client-error-Turn.run-sendMessageStream-<2006-01-02T15-04-05-000Z>.json
//	{"error":{"message","stack"},"context":[the request's contents]}
//
// The request's contents start with the CLI's <session_context>, which names
// the project's temporary directory (…/.gemini/tmp/<slug>), and end with the
// prompt. A report is the failed turn's only when all three agree: written
// during the turn, for this project dir, with this prompt.
const errReportPrefix = "gemini-client-error-"

// errReportSlack bounds how long after the prompt's rollback its report may be
// written (the CLI writes the report first; clocks agree, one machine).
const errReportSlack = 10 * time.Second

// failedTurn is what a rolled-back turn leaves in the session file.
type failedTurn struct {
	Prompt     string    // the rolled-back prompt's text
	At, Until  time.Time // when it was written, and the rollback
	ProjectDir string    // the session's …/.gemini/tmp/<slug>
}

// tmpDir is the temp dir the CLI writes its reports to (node's os.tmpdir()).
func tmpDir(env *discover.Env) string {
	for _, k := range []string{"TMPDIR", "TMP", "TEMP"} {
		if d := env.LookupEnv(k); d != "" {
			return strings.TrimSuffix(d, "/")
		}
	}
	return "/tmp"
}

// errReports lists the report files in dir by the time in their names.
type errReports struct {
	dir    string
	loaded bool
	files  []errReportFile
}

type errReportFile struct {
	Path string
	At   time.Time
}

func (r *errReports) load() {
	if r.loaded {
		return
	}
	r.loaded = true
	ents, err := os.ReadDir(r.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, errReportPrefix) || !strings.HasSuffix(name, ".json") || !e.Type().IsRegular() {
			continue
		}
		at, ok := reportTime(strings.TrimSuffix(name, ".json"))
		if !ok {
			continue
		}
		r.files = append(r.files, errReportFile{Path: filepath.Join(r.dir, name), At: at})
	}
}

// reportTime reads the time a report's name ends with: the CLI's ISO time
// with ':' and '.' replaced by '-' (2026-12-02T01-01-24-269Z).
func reportTime(stem string) (time.Time, bool) {
	const n = len("2006-01-02T15-04-05-000Z")
	if len(stem) < n {
		return time.Time{}, false
	}
	b := []byte(stem[len(stem)-n:])
	if b[13] != '-' || b[16] != '-' || b[19] != '-' {
		return time.Time{}, false
	}
	b[13], b[16], b[19] = ':', ':', '.'
	t, err := time.Parse("2006-01-02T15:04:05.000Z", string(b))
	return t, err == nil
}

// find returns the error message of the report for the failed turn, and its
// path ("" when none matches).
func (r *errReports) find(f failedTurn) (msg, path string) {
	r.load()
	for _, c := range r.files {
		if c.At.Before(f.At.Add(-time.Second)) || c.At.After(f.Until.Add(errReportSlack)) {
			continue
		}
		if m, ok := matchReport(c.Path, f); ok {
			return m, c.Path
		}
	}
	return "", ""
}

// maxReport bounds a report read whole: it holds the request's contents.
const maxReport = 16 << 20

func matchReport(path string, f failedTurn) (string, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxReport || !sameOwner(fi, f.ProjectDir) {
		return "", false
	}
	b, err := agentfs.ReadFile(path)
	if err != nil {
		return "", false
	}
	return parseReport(b, f)
}

// parseReport checks a report against a failed turn and returns its message.
func parseReport(b []byte, f failedTurn) (string, bool) {
	var rep struct {
		Error struct {
			Message json.RawMessage `json:"message"`
		} `json:"error"`
		Context []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text *string `json:"text"`
			} `json:"parts"`
		} `json:"context"`
	}
	if json.Unmarshal(b, &rep) != nil || len(rep.Context) == 0 {
		return "", false
	}
	text := func(i int) string {
		var ts []string
		for _, p := range rep.Context[i].Parts {
			if p.Text != nil {
				ts = append(ts, *p.Text)
			}
		}
		return strings.Join(ts, "")
	}
	first, last := text(0), text(len(rep.Context)-1)
	if !strings.HasPrefix(strings.TrimSpace(first), "<session_context>") ||
		!strings.Contains(first, "The project's temporary directory is: "+f.ProjectDir+"\n") {
		return "", false
	}
	if rep.Context[len(rep.Context)-1].Role != "user" || strings.TrimSpace(last) != strings.TrimSpace(f.Prompt) {
		return "", false
	}
	msg := str(rep.Error.Message)
	if msg == "" {
		msg = string(rep.Error.Message)
	}
	return msg, true
}

// sameOwner: the temp dir is shared by every user, so a report counts only
// when the user who owns the session's project dir wrote it — another user's
// file there (planted or not) says nothing about this session.
func sameOwner(report os.FileInfo, projectDir string) bool {
	pi, err := os.Stat(projectDir)
	if err != nil {
		return false
	}
	r, ok1 := report.Sys().(*syscall.Stat_t)
	p, ok2 := pi.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && r.Uid == p.Uid
}
