package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/discover"
)

// completionOptions is everything `completion` takes from its command line.
type completionOptions struct {
	shell string
}

func completionCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Description: `Prints a script that completes agentctl's commands, flags, adapter and status
names and — where a command takes a session ID — the ids of live sessions
(any session, once a few characters of the id are typed). The scripts ask
agentctl itself, through a hidden fast path that never finalises launches or
evicts records and gives each adapter one second.

Examples:
  source <(agentctl completion bash)                       # bash, this shell
  agentctl completion bash > /etc/bash_completion.d/agentctl
  agentctl completion zsh > "${fpath[1]}/_agentctl"          # zsh (then compinit)
  agentctl completion fish > ~/.config/fish/completions/agentctl.fish`,
		Action: func(c *cli.Context) error {
			o, err := completionOptionsFrom(c)
			if err != nil {
				return err
			}
			return runCompletion(s.Out, o)
		},
	}
}

func completionOptionsFrom(c *cli.Context) (completionOptions, error) {
	if c.NArg() != 1 {
		return completionOptions{}, usageErrorf("completion: want one shell: bash, zsh or fish (see agentctl completion --help)")
	}
	sh := c.Args().First()
	switch sh {
	case "bash", "zsh", "fish":
		return completionOptions{shell: sh}, nil
	}
	return completionOptions{}, usageErrorf("completion: unknown shell %q; want bash, zsh or fish", sh)
}

func runCompletion(w io.Writer, o completionOptions) error {
	_, err := io.WriteString(w, completionScripts[o.shell])
	return err
}

// The scripts hand the words typed so far to `agentctl __complete -- WORDS…`
// (the last word is the one being completed) and get back one candidate per
// line, "value<TAB>description". Nothing back means "complete file names".
// A candidate is data, never shell text: __complete offers only ids a shell
// reads back as themselves (shellWordSafe), and the scripts never expand what
// it prints (bash quotes each candidate with %q; zsh's compadd and fish quote
// what they insert).
var completionScripts = map[string]string{
	"bash": `# agentctl bash completion
_agentctl() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    local out line q
    out=$(agentctl __complete -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null | cut -f1)
    COMPREPLY=()
    if [ -z "$out" ]; then
        compopt -o default 2>/dev/null
        return
    fi
    # Each line is one candidate, taken as it is (compgen -W would expand a
    # $(...) in it) and quoted for the command line.
    while IFS= read -r line; do
        if [[ "$line" == "$cur"* ]]; then
            printf -v q '%q' "$line"
            COMPREPLY+=("$q")
        fi
    done <<< "$out"
}
complete -F _agentctl agentctl
`,
	"zsh": `#compdef agentctl
# agentctl zsh completion
_agentctl() {
    local -a lines cands
    lines=("${(@f)$(agentctl __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    if [[ -z "${lines[*]}" ]]; then
        _files
        return
    fi
    local l
    for l in "${lines[@]}"; do
        cands+=("${${l%%$'\t'*}//:/\\:}:${l#*$'\t'}")
    done
    _describe 'agentctl' cands
}
if [ "$funcstack[1]" = "_agentctl" ]; then
    _agentctl "$@"
else
    compdef _agentctl agentctl
fi
`,
	"fish": `# agentctl fish completion
function __agentctl_complete
    set -l words (commandline -opc)[2..-1] (commandline -ct)
    agentctl __complete -- $words 2>/dev/null
end
complete -c agentctl -f -a '(__agentctl_complete)'
complete -c agentctl -n 'test -z "(__agentctl_complete)"' -F
`,
}

// completeCommand is the hidden fast path behind the scripts.
func completeCommand(s *host) *cli.Command {
	return &cli.Command{
		Name:            "__complete",
		Hidden:          true,
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			words := c.Args().Slice()
			if len(words) > 0 && words[0] == "--" {
				words = words[1:]
			}
			ids := func(prefix string, typed typedGlobals) []string { return completeIDs(c, s, prefix, typed) }
			for _, cand := range complete(c.App, words, ids) {
				fmt.Fprintln(s.Out, cand)
			}
			return nil
		},
	}
}

// typedGlobals are the global flags typed on the line being completed: the
// session ids offered are those of that --home and those --adapters.
type typedGlobals struct {
	Home     string
	Adapters []string
}

// complete returns the candidates for the last of words (the words after
// "agentctl"; the last one is being typed, possibly empty). ids looks up session
// ids by prefix, under the global flags typed so far.
func complete(app *cli.App, words []string, ids func(prefix string, typed typedGlobals) []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	var cmd *cli.Command
	flags := app.Flags
	var pos []string
	var typed typedGlobals
	for i := 0; i < len(before); i++ {
		w := before[i]
		if strings.HasPrefix(w, "-") && w != "-" {
			name, val, hasVal := strings.Cut(strings.TrimLeft(w, "-"), "=")
			if takesValue(flags, w) && !hasVal {
				i++ // its value
				if i < len(before) {
					val, hasVal = before[i], true
				}
			}
			switch {
			case !hasVal:
			case name == "home":
				typed.Home = val
			case name == "adapter" && (cmd == nil || cmd.Name != "launch"):
				typed.Adapters = append(typed.Adapters, val)
			}
			continue
		}
		if cmd == nil {
			cmd = app.Command(w)
			if cmd == nil {
				return nil
			}
			flags = cmd.Flags
			continue
		}
		if len(cmd.Subcommands) > 0 && len(pos) == 0 {
			if sub := cmd.Command(w); sub != nil {
				cmd, flags = sub, sub.Flags
				continue
			}
		}
		pos = append(pos, w)
	}
	// The value of a flag typed just before.
	if n := len(before); n > 0 && strings.HasPrefix(before[n-1], "-") && takesValue(flags, before[n-1]) && !strings.Contains(before[n-1], "=") {
		return flagValues(cmd, strings.TrimLeft(before[n-1], "-"), cur)
	}
	if name, val, ok := strings.Cut(cur, "="); ok && strings.HasPrefix(cur, "-") && takesValue(flags, name) {
		var out []string
		for _, c := range flagValues(cmd, strings.TrimLeft(name, "-"), val) {
			out = append(out, name+"="+c)
		}
		return out
	}
	if strings.HasPrefix(cur, "-") {
		return matchFlags(flags, cur)
	}
	if cmd == nil {
		return matchCommands(app.Commands, cur)
	}
	if len(cmd.Subcommands) > 0 && len(pos) == 0 {
		return matchCommands(cmd.Subcommands, cur)
	}
	switch argKind(cmd.ArgsUsage, len(pos)) {
	case "ID":
		return ids(cur, typed)
	case "ADAPTER": // launch's: the agents it can start
		var names []string
		for _, a := range agents.All() {
			if a.Launch {
				names = append(names, a.Name)
			}
		}
		return withPrefix(names, cur, "adapter")
	case "bash|zsh|fish": // completion's shell
		return withPrefix([]string{"bash", "zsh", "fish"}, cur, "shell")
	}
	return nil // file names, or nothing to offer
}

// argKind is the kind of the i-th positional argument as the command's usage
// line names it ("ID MESSAGE", "ID...", "[ADAPTER]", "DIR").
func argKind(usage string, i int) string {
	toks := strings.Fields(usage)
	if len(toks) == 0 {
		return ""
	}
	var tok string
	switch {
	case i < len(toks):
		tok = toks[i]
	case strings.HasSuffix(toks[len(toks)-1], "..."):
		tok = toks[len(toks)-1]
	default:
		return ""
	}
	return strings.TrimSuffix(strings.Trim(tok, "[]"), "...")
}

func matchCommands(cmds []*cli.Command, cur string) []string {
	var out []string
	for _, c := range cmds {
		if c.Hidden || strings.HasPrefix(c.Name, "__") {
			continue
		}
		for _, n := range append([]string{c.Name}, c.Aliases...) {
			if strings.HasPrefix(n, cur) {
				out = append(out, n+"\t"+c.Usage)
			}
		}
	}
	return out
}

func matchFlags(flags []cli.Flag, cur string) []string {
	var out []string
	for _, f := range flags {
		if hiddenFlag(f) {
			continue
		}
		usage := flagRight(f) // as --help shows it: no backquotes
		for _, n := range f.Names() {
			name := "--" + n
			if len(n) == 1 {
				name = "-" + n
			}
			if strings.HasPrefix(name, cur) {
				out = append(out, name+"\t"+usage)
			}
		}
	}
	sort.Strings(out)
	return out
}

// flagValues are the values of a flag of cmd (nil: the app's) that start
// with cur. The flags that take a comma list (--status, --on, --by, --until)
// complete its last element: "idle,w" offers "idle,waiting".
func flagValues(cmd *cli.Command, flag, cur string) []string {
	done, last := "", cur
	if i := strings.LastIndex(cur, ","); i >= 0 {
		done, last = cur[:i+1], cur[i+1:]
	}
	var vals []string
	var desc string
	switch {
	case flag == "adapter":
		return withPrefix(agents.Names(), cur, "adapter")
	case flag == "status":
		vals, desc = []string{discover.StatusRunning, discover.StatusIdle, discover.StatusWaiting,
			discover.StatusStopped, discover.StatusFailed, discover.StatusUnknown, "blocked"}, "status"
	case flag == "on": // notify --on
		vals, desc = notifyStates, "status"
	case flag == "by" && cmd != nil && cmd.Name == "usage":
		vals, desc = usageKeys, "group by"
	case flag == "until" && cmd != nil && cmd.Name == "wait":
		vals, desc = []string{"done", discover.StatusIdle, discover.StatusWaiting, discover.StatusRunning,
			discover.StatusStopped, discover.StatusFailed, "blocked", "any-change"}, "status"
	case flag == "type" && cmd != nil && cmd.Name == "events":
		return withPrefix(eventTypes, cur, "event type")
	case flag == "hosts":
		return withPrefix([]string{"all"}, cur, "every host of config hosts")
	default:
		return nil
	}
	var out []string
	for _, c := range withPrefix(vals, last, desc) {
		if v, _, _ := strings.Cut(c, "\t"); !strings.Contains(","+done, ","+v+",") {
			out = append(out, done+c)
		}
	}
	return out
}

func withPrefix(vals []string, cur, desc string) []string {
	var out []string
	for _, v := range vals {
		if strings.HasPrefix(v, cur) {
			out = append(out, v+"\t"+desc)
		}
	}
	return out
}

// completeIDTimeout is each adapter's budget while completing: a shell waits
// for the answer at every Tab.
const completeIDTimeout = time.Second

// maxCompleteIDs bounds the candidates a shell is shown.
const maxCompleteIDs = 200

// completeIDs is the fast path: no lazy finalisation (which may run hooks), no
// eviction, no warnings, one second per adapter. With nothing typed it asks only
// for sessions that are alive (adapters may skip the rest); with a prefix it
// looks up just the sessions the prefix names, dead ones included, through the
// same lookup the single-session commands use.
func completeIDs(c *cli.Context, s *host, prefix string, typed typedGlobals) []string {
	quiet := &host{IOStreams: &IOStreams{In: s.In, Out: io.Discard, ErrOut: io.Discard}, getenv: s.getenv, now: s.now}
	g := globalsFrom(c)
	if h := typed.Home; h != "" {
		// As the shell will expand it when the line runs.
		if rest, ok := strings.CutPrefix(h, "~"); ok && (rest == "" || strings.HasPrefix(rest, "/")) {
			h = s.getenv("HOME") + rest
		}
		g.Home = h
	}
	if len(typed.Adapters) > 0 {
		g.Adapters = typed.Adapters
	}
	e, err := setup(quiet, g)
	if err != nil {
		return nil
	}
	env := e.newEnv()
	env.Launches, _ = e.store.ReadLaunches()
	ctx, cancel := context.WithTimeout(c.Context, 2*completeIDTimeout)
	defer cancel()
	var ss []discover.Session
	if prefix == "" {
		env.OnlyAlive = true
		res := discover.All(ctx, env, e.adapters, completeIDTimeout)
		for _, s := range res.Sessions {
			if discover.Alive(s.Status) {
				ss = append(ss, s)
			}
		}
	} else {
		// The lookup door's candidates, whatever it decided: every session the
		// prefix (or a launch id it spells) names; none for a path-like word.
		_, res, _ := discover.Lookup(ctx, env, e.adapters, completeIDTimeout, prefix, nil)
		ss = res.Sessions
	}
	var out []string
	for _, s := range ss {
		if len(out) == maxCompleteIDs {
			break
		}
		// An id a shell would not read back as itself ($(…), quotes, blanks,
		// a newline) is not offered: typed out, it would run or split.
		if !shellWordSafe(s.ID) {
			continue
		}
		out = append(out, s.ID+"\t"+termSafe(s.Adapter+" "+s.Status+" "+shortHome(s.Cwd, e.home)))
	}
	return out
}
