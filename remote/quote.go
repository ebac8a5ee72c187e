// Package remote runs agentctl on other machines over the user's own OpenSSH:
// `ssh -o BatchMode=yes HOST agentctl <command> --json`, with the user's keys,
// agents and ~/.ssh/config, and nothing of agentctl's listening anywhere. It
// quotes every argument for the remote shell (ssh hands the remote side one
// command line, which the user's login shell parses), checks the remote
// agentctl's version, and names why a host could not answer.
package remote

import (
	"errors"
	"strings"
)

// Quote quotes s for the remote user's login shell (sh, dash, bash, zsh or
// fish): single quotes, in which nothing is special, with each ' written as
// '\” and each backslash as '\\' (fish treats \' and \\ as escapes even
// inside single quotes, so a backslash must never sit inside them). Whatever s
// holds — ;, $(…), backquotes, quotes, newlines, globs — the shell sees one
// literal argument.
func Quote(s string) string {
	if s != "" && strings.Trim(s, safeChars) == "" {
		return s
	}
	return "'" + quoteRepl.Replace(s) + "'"
}

var quoteRepl = strings.NewReplacer(`'`, `'\''`, `\`, `'\\'`)

// safeChars need no quoting anywhere in a word, in any of those shells (no =:
// zsh expands a leading =cmd; no %: old fish expands a leading %).
const safeChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@,+"

// CommandLine is argv as one remote command line: each word quoted. The first
// word, the program, may start with ~/ (a per-host agentctl path under the
// remote home): the tilde stays outside the quotes so the remote shell expands
// it.
func CommandLine(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if i == 0 && strings.HasPrefix(a, "~/") && len(a) > 2 {
			b.WriteString("~/" + Quote(a[2:]))
			continue
		}
		b.WriteString(Quote(a))
	}
	return b.String()
}

// SplitCommand splits $AGENTCTL_SSH into words the way a POSIX shell would
// (git does the same with GIT_SSH_COMMAND): blanks separate words, '…' is
// literal, "…" honours \" \\ \$ and \`, a backslash outside quotes escapes the
// next character. Nothing is expanded: no variables, globs or command
// substitution.
func SplitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
					if s[i] == '\n' {
						continue
					}
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New(`unterminated " quote`)
			}
		case c == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			if s[i] == '\n' {
				continue
			}
			inWord = true
			cur.WriteByte(s[i])
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
