package main

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// zeroparse.sh measures the floor a cold listing's parsing sits on by building
// agentctl with zeroparse.patch. The patch names lines of the scanners; when
// they change, it must be brought along, or the floor can no longer be measured.
func TestZeroParsePatchApplies(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(git, "-C", root, "apply", "--check", filepath.Join(root, "e2e", "bench", "zeroparse.patch")).CombinedOutput()
	if err != nil {
		t.Fatalf("e2e/bench/zeroparse.patch does not apply to this tree: %v\n%s", err, out)
	}
}
