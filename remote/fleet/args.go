package fleet

import (
	"io"
	"strings"
	"time"

	"github.com/agentctl/agentctl/remote"
)

// idArgs are the arguments that are session ids (and so may be host:id).
func (sp Spec) idArgs(args []string) []string {
	switch {
	case sp.IDs == AllIDs:
		return args
	case (sp.IDs == FirstID || sp.IDs == FirstName) && len(args) > 0:
		return args[:1]
	}
	return nil
}

// splitHostID splits a host:id argument whose host is one agentctl knows
// (--host, config hosts, local); anything else is an id (OpenClaw's session
// keys contain colons).
func (o Options) splitHostID(a string) (remote.Host, string, bool) {
	h, id, ok := strings.Cut(a, ":")
	if !ok || id == "" {
		return remote.Host{}, "", false
	}
	for _, k := range o.known {
		if k.Name == h {
			return k, id, true
		}
	}
	return remote.Host{}, "", false
}

// stripHostFlags is argv (reordered: flags first, then the npos positional
// arguments) without the program, the positional arguments and the flags that
// only mean something here (--host, --hosts, --strict, --json: the remote
// side gets --json where it must).
func stripHostFlags(argv []string, npos int) []string {
	if len(argv) == 0 {
		return nil
	}
	end := len(argv) - npos
	if end < 1 {
		end = 1
	}
	if end > 1 && argv[end-1] == "--" {
		end--
	}
	var out []string
	for i := 1; i < end; i++ {
		a := argv[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
			continue
		}
		switch name {
		case "host", "hosts", "parallel":
			if !hasValue {
				i++
			}
			continue
		case "strict", "json":
			continue
		}
		out = append(out, a)
	}
	return out
}

// argsFor is the command line for host h: the flags (without --home, which
// names a directory here, for a remote host), --json when asked, then the
// positional arguments (ids with their host: taken off by the caller).
func (o Options) argsFor(h remote.Host, asJSON bool, pos []string) []string {
	var out []string
	for i := 0; i < len(o.flags); i++ {
		a := o.flags[i]
		if h.Name != remote.Local && strings.HasPrefix(a, "-") {
			if n, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "="); n == "home" {
				if !hasValue {
					i++
				}
				continue
			}
		}
		out = append(out, a)
	}
	if asJSON {
		out = append(out, "--json")
	}
	return append(out, pos...)
}

// hostTimeout bounds one call that returns at once (list, status, …): the
// connection gets the adapter timeout and the remote adapters another.
func (o Options) hostTimeout() time.Duration { return 2 * o.Timeout }

// resolveArgs are the global flags a lookup on h takes along.
func (o Options) resolveArgs(h remote.Host, id string) []string {
	args := []string{"status"}
	for i := 0; i < len(o.flags); i++ {
		n, _, hasValue := strings.Cut(strings.TrimLeft(o.flags[i], "-"), "=")
		if !strings.HasPrefix(o.flags[i], "-") {
			continue
		}
		if n == "adapter" || (n == "home" && h.Name == remote.Local) || (n == "timeout" && o.Mode != PerHost) {
			args = append(args, o.flags[i])
			if !hasValue && i+1 < len(o.flags) {
				args = append(args, o.flags[i+1])
				i++
			}
		}
	}
	return append(args, "--json", id)
}

// onStdin moves the prompt of launch (-p TEXT) and the message of resume and
// send (their second argument) out of the remote command line onto ssh's
// stdin: the remote side reads "-". A prompt or message that was "-" already
// (or send's -f -) is this stdin. Other commands get no stdin (ssh then reads
// none of ours).
func onStdin(rule Stdin, args []string, npos int, in io.Reader) (io.Reader, []string) {
	args = append([]string{}, args...)
	text := func(v string) io.Reader {
		if v == "-" {
			return in
		}
		return strings.NewReader(v)
	}
	switch rule {
	case PromptFlag:
		for i := 0; i < len(args)-npos; i++ {
			n, v, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
			if !strings.HasPrefix(args[i], "-") || (n != "p" && n != "prompt") {
				continue
			}
			if hasValue {
				args[i] = "--prompt=-"
				return text(v), args
			}
			if i+1 < len(args) {
				v := args[i+1]
				args[i+1] = "-"
				return text(v), args
			}
		}
	case SecondArg:
		if npos >= 2 {
			i := len(args) - npos + 1
			v := args[i]
			args[i] = "-"
			return text(v), args
		}
		// send -f -: the remote side reads its stdin, which is ours. (-f FILE
		// names a file on that host and needs none.)
		for i := 0; i < len(args)-npos; i++ {
			n, v, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
			if !strings.HasPrefix(args[i], "-") || (n != "f" && n != "file") {
				continue
			}
			if (hasValue && v == "-") || (!hasValue && i+1 < len(args)-npos && args[i+1] == "-") {
				return in, args
			}
		}
	}
	return nil, args
}

// anyFlag: wait --any.
func (o Options) anyFlag() bool {
	for _, f := range o.flags {
		if f == "--any" || f == "-any" {
			return true
		}
	}
	return false
}
