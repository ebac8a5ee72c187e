package worktree

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentctl/agentctl/internal/gittest"
)

// Worktrees added and removed in one repository by many callers at once (two
// group launches started together) all succeed: git alone fails one of them
// now and then, reading another's half-made .git/worktrees entry.
func TestConcurrentWorktreeAdds(t *testing.T) {
	repo := gittest.NewRepo(t)
	ctx := context.Background()
	for round := range 3 {
		var wg sync.WaitGroup
		errs := make([]error, 12)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b := fmt.Sprintf("try/r%d/s%d", round, i)
				path, err := AddWorktree(ctx, repo, b, "")
				if err == nil {
					err = RemoveWorktree(ctx, path, b)
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, worktree %d: %v", round, i, err)
			}
		}
	}
}
