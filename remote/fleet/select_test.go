package fleet

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/remote"
)

// Select turns --host, --hosts all and host:id arguments into the hosts a
// command runs on, as each command's Spec says.
func TestSelect(t *testing.T) {
	config := []remote.Host{{Name: "gpu", Agentctl: "~/bin/agentctl"}, {Name: "build"}}
	status := Spec{Mode: OneHost, IDs: FirstID}
	list := Spec{Mode: Merged, AskJSON: true, Drop: []string{"-q", "--count"}}
	for _, c := range []struct {
		name   string
		spec   Spec
		line   Line
		config []remote.Host
		wanted bool
		ok     bool
		hosts  []remote.Host
		flags  []string
		err    string // a usage error containing this
	}{
		{name: "no host named runs locally", spec: list, line: Line{Args: nil}},
		{name: "a host:id argument of a command without ids is no host", spec: list, line: Line{Args: []string{"gpu:x"}}},
		{name: "--hosts all takes the config hosts, with their agentctl", spec: list, config: config,
			line:   Line{Hosts: "all", Argv: []string{"agentctl", "list", "--hosts", "all", "-a"}},
			wanted: true, ok: true, hosts: config, flags: []string{"list", "-a"}},
		{name: "--hosts all with no config hosts names the config file", spec: list,
			line: Line{Hosts: "all"}, wanted: true, err: "config hosts is empty; add hosts to /state/config.json"},
		{name: "--hosts takes only all", spec: list, line: Line{Hosts: "gpu"}, wanted: true, err: `--hosts "gpu": the only value is all`},
		{name: "--host lists, each host once, a config host keeps its agentctl", spec: list, config: config,
			line:   Line{Host: []string{"build, gpu", "build"}, Argv: []string{"agentctl", "list", "--host", "build, gpu", "--host=build", "-q", "--count", "-a"}},
			wanted: true, ok: true, hosts: []remote.Host{{Name: "build"}, config[0]}, flags: []string{"list", "-a"}},
		{name: "a host ssh would read as an option", spec: list, line: Line{Host: []string{"-oProxyCommand=x"}}, wanted: true, err: "--host: host \"-oProxyCommand=x\" starts with '-'"},
		{name: "host:id of a known host runs there", spec: status, config: config,
			line:   Line{Args: []string{"gpu:abc"}, Argv: []string{"agentctl", "status", "gpu:abc"}},
			wanted: true, ok: true, flags: []string{"status"}},
		{name: "host:id of an unknown host is an id (OpenClaw keys have colons)", spec: status, config: config,
			line: Line{Args: []string{"agent:main:main"}}, wanted: true},
		{name: "a command refused across hosts", spec: Spec{Mode: Merged, Refuse: "list --watch runs on this machine only"},
			line: Line{Host: []string{"gpu"}}, wanted: true, err: "list --watch runs on this machine only"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.spec.Wanted(c.line); got != c.wanted {
				t.Fatalf("Wanted = %v, want %v", got, c.wanted)
			}
			if !c.wanted {
				return
			}
			o, ok, err := Select(c.spec, c.line, c.config, "/state/config.json")
			if c.err != "" {
				var fe *Error
				if !errors.As(err, &fe) || fe.Code != ExitUsage || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want a usage error containing %q", err, c.err)
				}
				return
			}
			if err != nil || ok != c.ok {
				t.Fatalf("Select: ok %v, err %v; want ok %v", ok, err, c.ok)
			}
			if d := cmp.Diff(c.hosts, o.hosts); d != "" {
				t.Errorf("hosts (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.flags, o.flags); ok && d != "" {
				t.Errorf("flags sent on (-want +got):\n%s", d)
			}
		})
	}
}
