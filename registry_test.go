package main

import (
	"strings"
	"testing"

	"github.com/agentctl/agentctl/agents"
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
