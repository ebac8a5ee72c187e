package meta

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConfigHosts(t *testing.T) {
	c, warns, err := ParseConfig("config.json", []byte(`{"hosts": ["gpu", {"host": "me@build", "agentctl": "/opt/bin/agentctl"}]}`))
	if err != nil || len(warns) > 0 {
		t.Fatalf("ParseConfig: %v %v", err, warns)
	}
	want := []HostEntry{{Host: "gpu"}, {Host: "me@build", Agentctl: "/opt/bin/agentctl"}}
	if d := cmp.Diff(want, c.Hosts); d != "" {
		t.Errorf("hosts (-want +got):\n%s", d)
	}
	for _, bad := range []string{`{"hosts": [{"agentctl": "/x"}]}`, `{"hosts": [{"host": "a", "port": 22}]}`, `{"hosts": [7]}`} {
		if _, _, err := ParseConfig("config.json", []byte(bad)); err == nil || !strings.Contains(err.Error(), "config.json") {
			t.Errorf("ParseConfig(%s): %v; want an error naming the file", bad, err)
		}
	}
}
