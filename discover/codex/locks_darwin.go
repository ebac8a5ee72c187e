package codex

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
)

// lsofHolders asks lsof once for every lock file (never once per process). macOS
// has no /proc/locks; the writer keeps its lock file open for as long as it holds
// the lock, so "open by" is "locked by".
func lsofHolders(ctx context.Context, files []string) (map[string]int, error) {
	bin, err := exec.LookPath("lsof")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLocksUnavailable, err)
	}
	out := map[string]int{}
	if len(files) == 0 {
		return out, nil
	}
	args := append([]string{"-n", "-P", "-F", "pn", "--"}, files...)
	b, err := exec.CommandContext(ctx, bin, args...).Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) { // 1: some files not open
		return nil, fmt.Errorf("lsof: %w", err)
	}
	want := map[string]bool{}
	for _, f := range files {
		want[f] = true
	}
	return parseLsof(b, want), nil
}

func defaultHolders() Holders { return lsofHolders }

func defaultOpenFiles() OpenFiles { return nil }
