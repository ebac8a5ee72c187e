package launch

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/sqlitero"
	"github.com/agentctl/agentctl/meta"
)

// OpenCode launches `opencode run` (docs/agents/opencode.md §6–8): JSON events on
// stdout, the prompt on stdin from a file, $PWD = --dir = the cwd. Its events
// carry the session id only from the first model reply, so the session is
// confirmed from OpenCode's own database first: the run is titled with a tag
// unique to the launch, and the row with that title (and directory) is the
// session. A resume is confirmed by the new user message in the resumed session.
type OpenCode struct{ local }

// OpenCodeConfirmTimeout: the row appears ~1 s after start (≤ 3 s while the model
// is blocked); the stdout fallback needs the first model reply.
const OpenCodeConfirmTimeout = 30 * time.Second

func (OpenCode) Name() string { return "opencode" }

var ocSessionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^ses_[0-9A-Za-z]{26}$`) })

// opencodeTitle is `agentctl-<8 hex of the launch id>`: unique per launch,
// stored when the row is created and never overwritten by OpenCode's
// auto-titling, so the row can be found by exact match. It holds nothing of the
// prompt: argv is visible in ps, and prompts never are (README "Commands", launch).
func opencodeTitle(launchID string) string {
	hex := strings.TrimPrefix(launchID, "l-")
	if len(hex) > 8 {
		hex = hex[:8]
	}
	if hex == "" {
		hex = "00000000"
	}
	return "agentctl-" + hex
}

// Plan builds `opencode run --format json --dir <cwd> [-m provider/model]
// --title <tag> [--auto]` or, to resume, `opencode run --session <id> --format
// json --dir <cwd> -m <model> [--auto]`. The prompt is never an argument: run
// joins positional args and quotes every one containing a space.
func (OpenCode) Plan(req *Request) (*Plan, error) {
	if req.AppendSystemPrompt != "" {
		return nil, &InputError{"--append-system-prompt is not supported for opencode; put the instructions in the prompt or in an OpenCode agent (opencode.json)"}
	}
	model := req.Model
	if model == "" && req.Kind == KindResume {
		model = req.SessionModel
	}
	// A bare model name fails inside OpenCode (ProviderModelNotFoundError, exit
	// 1) after a session row was created: refuse it before spawning.
	if model != "" {
		if p, m, ok := strings.Cut(model, "/"); !ok || p == "" || m == "" {
			return nil, &InputError{fmt.Sprintf("--model %q: opencode wants provider/model (e.g. anthropic/claude-sonnet-4-5)", model)}
		}
	}
	var auto []string
	switch req.PermissionMode {
	case "", "auto", "bypassPermissions":
		// Detached runs have nobody to ask: approve what the config does not
		// explicitly deny (docs/agents/opencode.md §6).
		auto = []string{"--auto"}
	case "default", "ask":
		// The user's own config decides; an "ask" rule in a headless run has
		// nobody to answer it.
	default:
		return nil, &InputError{fmt.Sprintf("--permission-mode %q: opencode takes auto (the default: --auto), bypassPermissions (same) or default (no --auto: your opencode.json rules decide, and an \"ask\" rule has nobody to answer it)", req.PermissionMode)}
	}
	bin, err := resolveOpenCode(req)
	if err != nil {
		return nil, err
	}
	env := agentEnv(req, "opencode")
	if req.LaunchID != "" {
		env.set("AGENTCTL_LAUNCH_ID", req.LaunchID)
	}
	applyUserEnv(env, req.UserEnv)
	p := &Plan{Bin: bin, ConfirmTimeout: OpenCodeConfirmTimeout}
	var m []string
	if model != "" {
		m = []string{"-m", model}
	}
	switch req.Kind {
	case KindResume:
		// --session, never -c: --continue picks the last session of the
		// current project (docs/agents/opencode.md §7).
		if !ocSessionRE().MatchString(req.SessionID) {
			return nil, &InputError{fmt.Sprintf("opencode resumes only a full session id (ses_…), not %q", req.SessionID)}
		}
		p.Args = append([]string{"run", "--session", req.SessionID, "--format", "json", "--dir", req.Cwd}, m...)
		p.SessionID = req.SessionID
	default:
		p.Args = append([]string{"run", "--format", "json", "--dir", req.Cwd}, m...)
		p.Args = append(p.Args, "--title", opencodeTitle(req.LaunchID))
	}
	p.Args = append(p.Args, auto...)
	p.Env, p.EnvNames = env.vars, env.names()
	return p, nil
}

type ocEvent struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionID"`
	Part      *struct {
		Reason string `json:"reason"`
	} `json:"part"`
	Error *struct {
		Name string `json:"name"`
		Data *struct {
			Message string `json:"message"`
		} `json:"data"`
		Message string `json:"message"`
	} `json:"error"`
}

func parseOCEvent(ln []byte) (ocEvent, bool) {
	t := bytes.TrimSpace(ln)
	var e ocEvent
	if len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &e) != nil || e.Type == "" {
		return e, false
	}
	return e, true
}

// Confirm takes the first sessionID on the event stream (docs/agents/opencode.md §6, the
// fallback: it comes with the first model output, or with an `error` event when
// the run fails before any — the session row exists then too).
func (OpenCode) Confirm(lines [][]byte, want string) (string, *meta.InitInfo, bool) {
	for _, ln := range lines {
		if e, ok := parseOCEvent(ln); ok && ocSessionRE().MatchString(e.SessionID) {
			return e.SessionID, nil, true
		}
	}
	return "", nil, false
}

// StrictResume: a resume answered under another session id is resume_mismatch.
func (OpenCode) StrictResume() bool { return true }

// Probe confirms from OpenCode's database: a launch by its unique title in its
// directory, a resume by a new user message in the resumed session.
func (OpenCode) Probe(p *Probe) (string, bool) {
	path := opencodeDB(p.Environ)
	// Only a live WAL database: OpenCode is running and owns the side files, so
	// a read-only open creates nothing next to the user's database.
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if st, err := os.Stat(f); err != nil || !st.Mode().IsRegular() {
			return "", false
		}
	}
	// One second bounds a poll of the confirmation loop (a writer checkpointing).
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var id string
	var ok bool
	_, err := sqlitero.Read(ctx, path, func(ctx context.Context, db *sql.DB) error {
		id, ok = probeOpenCodeDB(ctx, db, p)
		return nil
	})
	return id, err == nil && ok
}

// probeOpenCodeDB is Probe's query over OpenCode's database.
func probeOpenCodeDB(ctx context.Context, db *sql.DB, p *Probe) (string, bool) {
	since := p.Spawned.Add(-2 * time.Second).UnixMilli()
	if p.Kind == KindResume {
		var one int
		err := db.QueryRowContext(ctx, `SELECT 1 FROM message WHERE session_id = ? AND time_created >= ? AND json_extract(data, '$.role') = 'user' LIMIT 1`, p.Want, since).Scan(&one)
		return p.Want, err == nil
	}
	title := argValue(p.Argv, "--title")
	if title == "" {
		return "", false
	}
	rows, err := db.QueryContext(ctx, `SELECT id FROM session WHERE title = ? AND directory = ? AND time_created >= ?`, title, p.Cwd, since)
	if err != nil {
		return "", false
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if rows.Scan(&id) == nil {
			ids = append(ids, id)
		}
	}
	if rows.Err() != nil || len(ids) != 1 || !ocSessionRE().MatchString(ids[0]) {
		return "", false // none yet, or (impossibly) several: fall back to stdout
	}
	return ids[0], true
}

// opencodeDB is the database the agent writes, as its environment names it
// (docs/agents/opencode.md §1): OPENCODE_DB, else <XDG_DATA_HOME or ~/.local/share>/opencode/
// opencode.db, else the one opencode*.db there.
func opencodeDB(environ []string) string {
	data := ""
	if x, _ := lookupEnv(environ, "XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		data = filepath.Join(x, "opencode")
	} else {
		home, _ := lookupEnv(environ, "HOME")
		data = filepath.Join(home, ".local", "share", "opencode")
	}
	if v, _ := lookupEnv(environ, "OPENCODE_DB"); v != "" && v != ":memory:" {
		if !filepath.IsAbs(v) {
			v = filepath.Join(data, v)
		}
		return v
	}
	main := filepath.Join(data, "opencode.db")
	if _, err := os.Stat(main); err == nil {
		return main
	}
	if m, _ := filepath.Glob(filepath.Join(data, "opencode*.db")); len(m) == 1 {
		return m[0]
	}
	return main
}

// argValue returns the value after flag in argv ("" when absent).
func argValue(argv []string, flag string) string {
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == flag {
			return argv[i+1]
		}
	}
	return ""
}

// Classify (docs/agents/opencode.md §6 failure table): an `error` event decides (a bare or
// unknown model is bad-model), then the exit code: 0 is done, a signal is killed,
// anything else before a session existed is startup-failed. Never run time.
func (OpenCode) Classify(lines [][]byte, exitCode int, stopRequested bool) Outcome {
	session := false
	var errName, errMsg, finish string
	var text []string
	for _, ln := range lines {
		e, ok := parseOCEvent(ln)
		if !ok {
			if s := strings.TrimSpace(string(ln)); s != "" && !strings.HasPrefix(s, "agentctl:") {
				text = append(text, s)
			}
			continue
		}
		if e.SessionID != "" {
			session = true
		}
		if e.Type == "step_finish" && e.Part != nil {
			finish = e.Part.Reason
		}
		if e.Type == "error" && e.Error != nil {
			errName, errMsg = e.Error.Name, e.Error.Message
			if e.Error.Data != nil && e.Error.Data.Message != "" {
				errMsg = e.Error.Data.Message
			}
		}
	}
	tail := func() string {
		for _, l := range text {
			if strings.Contains(l, "Error") || strings.Contains(l, "error") {
				return ": " + oneLine(l, 200)
			}
		}
		if n := len(text); n > 0 {
			return ": " + oneLine(text[n-1], 200)
		}
		return ""
	}
	if errName == "" {
		for _, l := range text {
			if strings.Contains(l, "ProviderModelNotFoundError") {
				errName, errMsg = "ProviderModelNotFoundError", l
			}
		}
	}
	switch {
	case errName == "ProviderModelNotFoundError":
		return Outcome{Class: "bad-model", Message: oneLine(errMsg, 200) + "; pass --model provider/model (e.g. anthropic/claude-sonnet-4-5)"}
	case errName == "MessageAbortedError":
		if stopRequested {
			return Outcome{}
		}
		return Outcome{Class: "aborted", Message: "the turn was aborted"}
	case errName != "" && !stopRequested:
		msg := errName
		if errMsg != "" {
			msg += ": " + errMsg
		}
		return Outcome{Class: "error", Message: oneLine(msg, 200)}
	case stopRequested:
		return Outcome{}
	case exitCode == 0, exitCode < 0 && finish == "stop":
		// exit code unknown (lazily finalised): the last step finished the turn
		return Outcome{}
	case exitCode > 128:
		return Outcome{Class: "killed", Message: fmt.Sprintf("opencode was killed (%s)", codeText(exitCode))}
	case !session && exitCode > 0:
		return Outcome{Class: "startup-failed", Message: fmt.Sprintf("opencode exited (%s) before starting a session%s", codeText(exitCode), tail())}
	}
	return Outcome{Class: "crashed", Message: fmt.Sprintf("opencode exited (%s)%s", codeText(exitCode), tail())}
}
