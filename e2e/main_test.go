// Package e2e drives the built agentctl binary against the real agent CLIs
// (pinned, installed by the harness) talking to stub model servers on 127.0.0.1.
package e2e

import (
	"os"
	"testing"

	"github.com/agentctl/agentctl/e2e/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }
