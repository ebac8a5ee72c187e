package main

import (
	"strings"
	"testing"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/launch"
)

// The read-side adapters main builds are exactly the registry's readers.
func TestAdaptersCoverTheRegistry(t *testing.T) {
	var got []string
	for _, a := range allAdapters() {
		got = append(got, a.Name())
	}
	if strings.Join(got, ",") != strings.Join(agents.Readers(), ",") {
		t.Errorf("adapters %v, registry readers %v", got, agents.Readers())
	}
}

// launch's policies name the read side's evidence kinds as strings (launch does
// not import discover): they must be discover's.
func TestEvidenceNamesMatch(t *testing.T) {
	for l, d := range map[string]string{
		launch.EvidenceLaunchRecord: discover.EvidenceLaunchRecord,
		launch.EvidenceRegistry:     discover.EvidenceRegistry,
		launch.EvidenceArgv:         discover.EvidenceArgv,
		launch.EvidenceProcess:      discover.EvidenceProcess,
	} {
		if l != d {
			t.Errorf("launch evidence %q, discover %q", l, d)
		}
	}
}
