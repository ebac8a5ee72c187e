package claude

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
)

// TestForkTableFollowsTheBucket: after a listing records the buckets' fork
// tables, lookups of every session agree with a new listing when a fork is
// added to the bucket (the directory changed: the table is stale), and when a
// transcript that had no reply yet when the table was made gets the parent's
// copied turns without any file being created (it was unsettled).
func TestForkTableFollowsTheBucket(t *testing.T) {
	const parent, fork = "63a9dd20-452d-46cb-844e-bd4800ad2458", "9ee4fdd2-41ff-4937-a320-74e0a6f6767c"
	home := copyHome(t)
	bucket := filepath.Join(home, ".claude", "projects", "-home-dev-webapp")
	forkLines, err := os.ReadFile(filepath.Join(bucket, fork+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, home, nil)
	a := testAdapter()
	check := func(step string, ids ...string) {
		t.Helper()
		all := discovertest.DiscoverAll(t, a, newEnv(t, home, nil).Env) // its own, cold index
		for _, id := range ids {
			got, err := a.Find(context.Background(), env.Env, discover.Query{Prefix: id})
			if err != nil || len(got) != 1 {
				t.Fatalf("%s: Find(%s) = %d sessions, %v", step, id, len(got), err)
			}
			if diff := cmp.Diff(all[id], got[0]); diff != "" {
				t.Errorf("%s: %s (-Discover +Find):\n%s", step, id, diff)
			}
		}
	}
	discovertest.DiscoverAll(t, a, env.Env) // records the tables
	if _, err := os.Stat(filepath.Join(env.StateDir, "cache", Name+"-forks.index")); err != nil {
		t.Fatalf("no fork table: %v", err)
	}
	check("recorded", parent, fork)

	// A second fork of the parent: a new file, so the directory changed.
	const fork2 = "00000000-41ff-4937-a320-74e0a6f6767c" // sorts before fork: fork now inherits from it
	writeRenamed(t, filepath.Join(bucket, fork2+".jsonl"), forkLines, fork, fork2)
	check("new fork", parent, fork, fork2)

	// A transcript with no reply yet, recorded as unsettled, then given the
	// parent's copied turns by appending only.
	const late = "bbbbbbbb-41ff-4937-a320-74e0a6f6767c"
	lines := bytes.SplitAfter(bytes.ReplaceAll(forkLines, []byte(fork), []byte(late)), []byte("\n"))
	head := lines[0] // the mode line: no usage key yet
	if err := os.WriteFile(filepath.Join(bucket, late+".jsonl"), head, 0o600); err != nil {
		t.Fatal(err)
	}
	discovertest.DiscoverAll(t, a, env.Env) // records late as unsettled
	check("unsettled recorded", late, fork)
	f, err := os.OpenFile(filepath.Join(bucket, late+".jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(bytes.Join(lines[1:], nil))
	f.Close()
	future := time.Now().Add(time.Second)
	os.Chtimes(filepath.Join(bucket, late+".jsonl"), future, future)
	check("unsettled settled", late, fork, parent)
	if got, _ := a.Find(context.Background(), env.Env, discover.Query{Prefix: late}); len(got) != 1 || got[0].Extra["tokens_inherited"] == nil {
		t.Errorf("the late fork inherits nothing: %+v", got)
	}
}

func writeRenamed(t *testing.T, path string, b []byte, from, to string) {
	t.Helper()
	if err := os.WriteFile(path, bytes.ReplaceAll(b, []byte(from), []byte(to)), 0o600); err != nil {
		t.Fatal(err)
	}
}
