package metrics

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMerge(t *testing.T) {
	const (
		sessA = "# HELP agentctl_sessions Sessions by status.\n# TYPE agentctl_sessions gauge\nagentctl_sessions{status=\"running\"} 2\n"
		sessB = "# HELP agentctl_sessions Sessions by status.\n# TYPE agentctl_sessions gauge\nagentctl_sessions{status=\"running\"} 1\n"
		upB   = "# HELP agentctl_up Up.\n# TYPE agentctl_up gauge\nagentctl_up 1\n"
	)
	for _, c := range []struct {
		name     string
		in       []Exposition
		want     string
		warnings []string
	}{
		{name: "no hosts", in: nil, want: ""},
		{
			name: "a family on two hosts keeps one HELP and TYPE; each sample gets its host first",
			in:   []Exposition{{"a", []byte(sessA)}, {"b", []byte(sessB + upB)}},
			want: `# HELP agentctl_sessions Sessions by status.
# TYPE agentctl_sessions gauge
agentctl_sessions{host="a",status="running"} 2
agentctl_sessions{host="b",status="running"} 1
# HELP agentctl_up Up.
# TYPE agentctl_up gauge
agentctl_up{host="b"} 1
`,
		},
		{
			name: "families sorted by name, whatever the hosts' order",
			in:   []Exposition{{"b", []byte(upB)}, {"a", []byte(sessA)}},
			want: `# HELP agentctl_sessions Sessions by status.
# TYPE agentctl_sessions gauge
agentctl_sessions{host="a",status="running"} 2
# HELP agentctl_up Up.
# TYPE agentctl_up gauge
agentctl_up{host="b"} 1
`,
		},
		{
			name: "a broken host keeps what was read before and is named in a warning",
			in:   []Exposition{{"a", []byte(sessA + "}}}\n")}, {"b", []byte(upB)}},
			want: `# HELP agentctl_sessions Sessions by status.
# TYPE agentctl_sessions gauge
agentctl_sessions{host="a",status="running"} 2
# HELP agentctl_up Up.
# TYPE agentctl_up gauge
agentctl_up{host="b"} 1
`,
			warnings: []string{"a: unreadable metrics: text format parsing error in line 4: invalid metric name"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			fams, warnings := Merge(c.in)
			var out bytes.Buffer
			if err := fams.Write(&out); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, out.String()); d != "" {
				t.Errorf("merged exposition (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.warnings, warnings); d != "" {
				t.Errorf("warnings (-want +got):\n%s", d)
			}
		})
	}
}
