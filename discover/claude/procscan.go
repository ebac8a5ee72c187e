package claude

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// claudeProc is a live process that looks like Claude Code, with what its argv
// says.
type claudeProc struct {
	PID      int
	PPID     int
	Cwd      string
	StartMs  int64
	HasStart bool
	Flags    args
}

// args is what agentctl reads from a claude command line.
type args struct {
	Print      bool   // -p/--print without --input-format stream-json: exits when done
	Names      string // the session --session-id/--resume/-r names ("" if none)
	Subcommand bool   // mcp, doctor, update, …: not a session
}

var versionComm = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+`)

// subcommands are first arguments that make claude something other than a session.
var subcommands = map[string]bool{
	"mcp": true, "doctor": true, "update": true, "upgrade": true, "install": true, "agents": true,
	"auth": true, "plugin": true, "setup-token": true, "--version": true, "-v": true, "--help": true,
	"--handle-uri": true,
	// Claude's background machinery (docs/agents/claude-code.md §4.5): its daemon, pty hosts and
	// pre-warmed spares. A claimed spare keeps its argv and is a session only
	// through the registry entry that names its PID; none of them is ever
	// matched to a session by cwd. The pty hosts and spares set their title:
	// argv[0] is "claude bg-pty-host", so the first argument is the flag; a
	// pty host's argv also carries its session's --session-id and prompt.
	"daemon": true, "bg-pty-host": true, "bg-spare": true, "--bg-pty-host": true, "--bg-spare": true,
	"stop": true, "attach": true, "logs": true,
}

// claudeArgs returns the arguments after the program when p is a Claude Code
// process (docs/agents/claude-code.md §4.2 candidates), or ok=false.
func claudeArgs(t proc.Table, p proc.Process) ([]string, bool) {
	switch {
	case p.Comm == "claude" || p.Comm == "claude.exe":
	case versionComm.MatchString(p.Comm):
		// Native installs exec ~/.local/share/claude/versions/<x.y.z>: comm is the version.
		exe, err := t.Exe(p.PID)
		if err != nil || !(isClaudeExe(exe) || strings.Contains(exe, "/claude/versions/")) {
			return nil, false
		}
	case p.Comm == "node" || p.Comm == "bun":
		argv, err := t.Argv(p.PID)
		if err != nil {
			return nil, false
		}
		for i, a := range argv {
			if i > 0 && (strings.HasSuffix(a, "/claude") || strings.HasSuffix(a, "@anthropic-ai/claude-code/cli.js")) {
				return argv[i+1:], true
			}
		}
		return nil, false
	default:
		return nil, false
	}
	argv, err := t.Argv(p.PID)
	if err != nil || len(argv) == 0 {
		return nil, true // a claude we cannot read: still a candidate, no argv facts
	}
	return argv[1:], true
}

func isClaudeExe(path string) bool {
	b := filepath.Base(path)
	return b == "claude" || b == "claude.exe"
}

// parseArgs reads the flags that matter for liveness.
func parseArgs(argv []string) args {
	var a args
	if len(argv) > 0 && subcommands[argv[0]] {
		a.Subcommand = true
		return a
	}
	var sessionID, resume, inputFormat string
	fork := false
	for i := 0; i < len(argv); i++ {
		arg := argv[i]
		val := func() string {
			if i+1 < len(argv) {
				i++
				return argv[i]
			}
			return ""
		}
		name, inline, hasInline := strings.Cut(arg, "=")
		if !strings.HasPrefix(arg, "--") {
			hasInline = false
			name = arg
		}
		get := func() string {
			if hasInline {
				return inline
			}
			return val()
		}
		switch name {
		case "-p", "--print":
			a.Print = true
		case "--input-format":
			inputFormat = get()
		case "--session-id":
			sessionID = get()
		case "--resume", "-r":
			// --resume without an id opens a picker; only take a UUID-shaped value.
			if hasInline {
				resume = inline
			} else if i+1 < len(argv) && isUUID(argv[i+1]) {
				resume = val()
			}
		case "--fork-session":
			fork = true
		}
	}
	if inputFormat == "stream-json" {
		a.Print = false // a long-lived SDK session: status comes from elsewhere
	}
	switch {
	case fork:
		a.Names = sessionID // a fork runs under its new --session-id, not the resumed id
	case sessionID != "":
		a.Names = sessionID
	default:
		a.Names = resume
	}
	if !isUUID(a.Names) {
		a.Names = ""
	}
	return a
}

// findClaudeProcs lists live Claude Code session processes: subcommands and
// children of another candidate (e.g. a wrapper's child) excluded.
func findClaudeProcs(t proc.Table, startMs startMillis) []claudeProc {
	var out []claudeProc
	for _, p := range t.All() {
		argv, ok := claudeArgs(t, p)
		if !ok {
			continue
		}
		c := claudeProc{PID: p.PID, PPID: p.PPID, Flags: parseArgs(argv)}
		if c.Flags.Subcommand {
			continue
		}
		c.Cwd, _ = t.Cwd(p.PID)
		c.StartMs, c.HasStart = startMs(p)
		out = append(out, c)
	}
	isCand := map[int]bool{}
	for _, c := range out {
		isCand[c.PID] = true
	}
	kept := out[:0]
	for _, c := range out {
		if !isCand[c.PPID] || c.PPID == c.PID {
			kept = append(kept, c)
		}
	}
	return kept
}

// inRoot reports whether the claude process pid works in the config root root:
// its environment's CLAUDE_CONFIG_DIR, else its HOME's .claude (as Root reads
// agentctl's own). A process whose environment cannot be read is not counted.
func inRoot(t proc.Table, pid int, root string) bool {
	env, err := t.Environ(pid)
	if err != nil {
		return false
	}
	vars := discover.EnvVars(env)
	home, dir := vars["HOME"], vars["CLAUDE_CONFIG_DIR"]
	switch {
	case dir == "~" || strings.HasPrefix(dir, "~/"):
		dir = filepath.Join(home, dir[1:])
	case dir == "" && home != "":
		dir = filepath.Join(home, ".claude")
	}
	if dir == "" || !filepath.IsAbs(dir) {
		return false
	}
	if filepath.Clean(dir) == filepath.Clean(root) {
		return true
	}
	a, errA := os.Stat(dir)
	b, errB := os.Stat(root)
	return errA == nil && errB == nil && os.SameFile(a, b)
}
