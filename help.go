// Help: how `agentctl --help`, `agentctl COMMAND --help` and `agentctl help
// COMMAND` look. One renderer for every command (the gh/cobra shape): the
// summary and description, Usage, Aliases, Commands, the command's own Flags,
// the global flags once in a line, and Examples last, as their own section.
package main

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
)

// helpWidth is where flag descriptions wrap (descriptions are written
// wrapped already).
const helpWidth = 100

// setHelp renders the help that the command line args can show into the
// CustomHelpTemplate of the app and of the commands named in args, once the
// app is complete (global flags appended). The library then prints that text
// as it is; nothing of its own flag rendering (`value` placeholders,
// `(default: false)`, ` [ --host local ]`) is used. Help is only shown for a
// line that asks for it (-h, --help, help) or names no command, or for a
// command with subcommands given none, so every other run renders nothing.
func setHelp(app *cli.App, args []string) {
	asked, named := false, map[string]bool{}
	for _, a := range args[min(1, len(args)):] {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		asked = asked || name == "h" || name == "help"
		named[a] = true
	}
	var globals []cli.Flag
	namedOne := false
	for _, c := range app.Commands {
		for _, n := range c.Names() {
			if named[n] && (asked || len(c.Subcommands) > 0) {
				if globals == nil {
					globals = globalFlags()
				}
				setCommandHelp(c, "agentctl", globals)
			}
			namedOne = namedOne || named[n]
		}
	}
	if asked || !namedOne {
		app.CustomAppHelpTemplate = templateLiteral(appHelp(app))
	}
}

func setCommandHelp(c *cli.Command, parent string, globals []cli.Flag) {
	if c.Hidden {
		return
	}
	path := parent + " " + c.Name
	c.CustomHelpTemplate = templateLiteral(commandHelp(c, path, globals))
	for _, sc := range c.Subcommands {
		setCommandHelp(sc, path, globals)
	}
}

// templateLiteral makes text print as itself through text/template.
func templateLiteral(text string) string {
	return strings.ReplaceAll(text, "{{", `{{"{{"}}`)
}

// appHelp is `agentctl --help`: the global flags in full, every command.
func appHelp(app *cli.App) string {
	var b strings.Builder
	desc, examples := splitExamples(app.Description)
	fmt.Fprintf(&b, "agentctl: %s\n\n", app.Usage)
	fmt.Fprintf(&b, "Usage:\n  agentctl COMMAND [flags]\n\n")
	b.WriteString("Commands:\n")
	var rows [][2]string
	for _, c := range app.VisibleCommands() {
		rows = append(rows, [2]string{strings.Join(c.Names(), ", "), c.Usage})
	}
	writeRows(&b, rows)
	if desc != "" {
		b.WriteString("\n" + desc + "\n")
	}
	b.WriteString("\nGlobal flags (before or after the command):\n")
	var fs []cli.Flag
	for _, f := range app.Flags {
		if !isHelpFlag(f) && !hiddenFlag(f) {
			fs = append(fs, f)
		}
	}
	writeRows(&b, append(flagRows(fs), [2]string{"-h, --help", "show help (also: agentctl help COMMAND)"}))
	writeExamples(&b, examples)
	b.WriteString("\nRun agentctl COMMAND --help for a command's flags and examples.\n")
	return b.String()
}

// commandHelp is one command's help; path is "agentctl worktree clean".
func commandHelp(c *cli.Command, path string, globals []cli.Flag) string {
	var b strings.Builder
	desc, examples := splitExamples(c.Description)
	fmt.Fprintf(&b, "%s: %s\n", path, c.Usage)
	if desc != "" {
		b.WriteString("\n" + desc + "\n")
	}
	b.WriteString("\nUsage:\n  " + path)
	if len(c.Subcommands) > 0 {
		b.WriteString(" COMMAND")
	}
	if c.ArgsUsage != "" {
		b.WriteString(" " + c.ArgsUsage)
	}
	b.WriteString(" [flags]\n")
	if len(c.Aliases) > 0 {
		fmt.Fprintf(&b, "\nAliases:\n  %s\n", strings.Join(c.Names(), ", "))
	}
	if vis := c.VisibleCommands(); len(vis) > 0 {
		b.WriteString("\nCommands:\n")
		var rows [][2]string
		for _, sc := range vis {
			if sc.Name == "help" {
				continue
			}
			rows = append(rows, [2]string{strings.Join(sc.Names(), ", "), sc.Usage})
		}
		writeRows(&b, rows)
	}
	var own, inherited []cli.Flag
	for _, f := range c.Flags {
		switch {
		case isHelpFlag(f), hiddenFlag(f):
		case isGlobal(f, globals):
			inherited = append(inherited, f)
		default:
			own = append(own, f)
		}
	}
	if len(own) > 0 {
		b.WriteString("\nFlags:\n")
		writeRows(&b, flagRows(own))
	}
	var names []string
	for _, f := range inherited {
		names = append(names, flagLeft(f))
	}
	names = append(names, "-h/--help")
	b.WriteString("\nGlobal flags (see agentctl --help):\n")
	b.WriteString(wrapText(strings.Join(names, ", "), 2, helpWidth) + "\n")
	writeExamples(&b, examples)
	return b.String()
}

// isGlobal reports whether f is one of the global flags appended to every
// command (launch's own --adapter has the name but not the meaning).
func isGlobal(f cli.Flag, globals []cli.Flag) bool {
	for _, g := range globals {
		if g.Names()[0] == f.Names()[0] && flagUsage(g) == flagUsage(f) {
			return true
		}
	}
	return false
}

func isHelpFlag(f cli.Flag) bool { return f.Names()[0] == "help" }

// hiddenFlag is a flag for agentctl's own use (--version-line, what one
// agentctl passes another over ssh): never listed, never completed.
func hiddenFlag(f cli.Flag) bool {
	v, ok := f.(cli.VisibleFlag)
	return ok && !v.IsVisible()
}

// splitExamples cuts an "Examples:" block out of a description: the line
// "Examples:" and the indented lines after it (blank lines between them
// included). Text after the block stays in the description.
func splitExamples(desc string) (rest string, examples []string) {
	lines := strings.Split(desc, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == "Examples:" {
			start = i
			break
		}
	}
	if start < 0 {
		return strings.TrimSpace(desc), nil
	}
	indent := len(lines[start]) - len(strings.TrimLeft(lines[start], " "))
	end := start + 1
	for end < len(lines) {
		l := lines[end]
		if strings.TrimSpace(l) != "" && len(l)-len(strings.TrimLeft(l, " ")) <= indent {
			break
		}
		if strings.TrimSpace(l) != "" {
			examples = append(examples, strings.TrimSpace(l))
		}
		end++
	}
	kept := append(append([]string{}, lines[:start]...), lines[end:]...)
	return strings.TrimSpace(strings.Join(kept, "\n")), examples
}

func writeExamples(b *strings.Builder, examples []string) {
	if len(examples) == 0 {
		return
	}
	b.WriteString("\nExamples:\n")
	for _, e := range examples {
		b.WriteString("  " + e + "\n")
	}
}

// withUsage is fs with the usage of flag name replaced: a command that shares
// a flag list but prints something else under one of them (resume --json).
func withUsage(fs []cli.Flag, name, usage string) []cli.Flag {
	out := make([]cli.Flag, 0, len(fs))
	for _, f := range fs {
		if b, ok := f.(*cli.BoolFlag); ok && b.Name == name {
			c := *b
			c.Usage = usage
			f = &c
		}
		out = append(out, f)
	}
	return out
}

// flagRows are the two columns of a flag list.
func flagRows(fs []cli.Flag) [][2]string {
	var rows [][2]string
	shorts := false
	for _, f := range fs {
		shorts = shorts || strings.HasPrefix(flagLeft(f), "-") && !strings.HasPrefix(flagLeft(f), "--")
	}
	for _, f := range fs {
		left := flagLeft(f)
		if shorts && strings.HasPrefix(left, "--") {
			left = "    " + left // under the long names of "-a, --all"
		}
		rows = append(rows, [2]string{left, flagRight(f)})
	}
	return rows
}

// placeholderRe is a placeholder written in backquotes in a usage string:
// upper case, as `DIR`, `STATUS[,…]`, `K=V`, `OWNER/REPO`. Backquoted text
// that is not one (`claude attach <short>`, `local`) is prose and stays.
var placeholderRe = regexp.MustCompile("`([A-Z][A-Z0-9_=/.,…\\[\\]-]*)`")

// onlyValueRe is a usage string that starts by naming the flag's only value,
// "`all`: run on every host": the value is shown as typed (--hosts all).
var onlyValueRe = regexp.MustCompile("^`([a-z][a-z0-9-]*)`:")

// flagLeft is "-p, --prompt TEXT": the short names first, then the long
// ones, the value's placeholder once, after the last.
func flagLeft(f cli.Flag) string {
	var short, long []string
	for _, n := range f.Names() {
		if len(n) == 1 {
			short = append(short, "-"+n)
		} else {
			long = append(long, "--"+n)
		}
	}
	left := strings.Join(append(short, long...), ", ")
	if p := flagPlaceholder(f); p != "" {
		left += " " + p
	}
	return left
}

// flagPlaceholder names a flag's value: the usage string's backquoted
// placeholder, else one from the flag's type or the last word of its name
// (--base-branch BRANCH, -n N); never the library's "value". A flag that
// takes no value has none.
func flagPlaceholder(f cli.Flag) string {
	if !flagTakesValue(f) {
		return ""
	}
	if m := placeholderRe.FindStringSubmatch(flagUsage(f)); m != nil {
		return m[1]
	}
	if m := onlyValueRe.FindStringSubmatch(flagUsage(f)); m != nil {
		return m[1]
	}
	switch f.(type) {
	case *cli.IntFlag, *cli.Int64Flag:
		return "N"
	case *cli.DurationFlag:
		return "DUR"
	}
	name := f.Names()[0]
	if len(name) == 1 {
		return strings.ToUpper(name)
	}
	return strings.ToUpper(name[strings.LastIndex(name, "-")+1:])
}

func flagTakesValue(f cli.Flag) bool {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		return d.TakesValue()
	}
	return false
}

func flagUsage(f cli.Flag) string {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		return d.GetUsage()
	}
	return ""
}

// flagRight is a flag's description: the usage string with its placeholder's
// backquotes dropped, "(repeatable)" for a list flag that does not say so,
// and the default spelled one way, "(default: X)", when the flag has one the
// text does not already give. Booleans show no default: absent is off.
func flagRight(f cli.Flag) string {
	u := strings.TrimSpace(onlyValueRe.ReplaceAllString(flagUsage(f), ""))
	u = placeholderRe.ReplaceAllString(u, "$1")
	if _, ok := f.(*cli.StringSliceFlag); ok && !strings.Contains(u, "repeatable") {
		u += " (repeatable)"
	}
	if d := flagDefault(f); d != "" && !strings.Contains(u, "default") {
		u += " (default: " + d + ")"
	}
	return u
}

// flagDefault is a value flag's default as typed on a command line.
func flagDefault(f cli.Flag) string {
	switch f := f.(type) {
	case *cli.StringFlag:
		return f.Value
	case *cli.IntFlag:
		if f.Value != 0 {
			return fmt.Sprint(f.Value)
		}
	case *cli.Int64Flag:
		if f.Value != 0 {
			return fmt.Sprint(f.Value)
		}
	case *cli.StringSliceFlag:
		if f.Value != nil {
			return strings.Join(f.Value.Value(), ",")
		}
	}
	return ""
}

// writeRows writes two aligned columns, the second wrapped at helpWidth; a
// left column too wide for the alignment puts its text on the next line.
func writeRows(b *strings.Builder, rows [][2]string) {
	const maxLeft = 30
	w := 0
	for _, r := range rows {
		if n := len([]rune(r[0])); n <= maxLeft && n > w {
			w = n
		}
	}
	for _, r := range rows {
		left := "  " + r[0]
		if r[1] == "" {
			b.WriteString(left + "\n")
			continue
		}
		indent := 2 + w + 3
		right := wrapText(r[1], indent, helpWidth)[indent:]
		if n := len([]rune(r[0])); n > w {
			b.WriteString(left + "\n" + strings.Repeat(" ", indent) + right + "\n")
			continue
		}
		b.WriteString(left + strings.Repeat(" ", indent-len([]rune(left))) + right + "\n")
	}
}

// wrapText wraps s at width, each line indented by indent spaces.
func wrapText(s string, indent, width int) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/width*(indent+1) + indent)
	pad := strings.Repeat(" ", indent)
	b.WriteString(pad)
	n := indent // runes on the current line
	for _, word := range strings.Fields(s) {
		w := utf8.RuneCountInString(word)
		switch {
		case n == indent:
		case n+1+w > width:
			b.WriteString("\n" + pad)
			n = indent
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += w
	}
	return b.String()
}
