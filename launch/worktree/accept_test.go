package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/gittest"
	"github.com/agentctl/agentctl/proc"
)

// slotRepo is a repository with one try branch in its own worktree, the
// slot's work (a tracked edit and an untracked file) left uncommitted.
func slotRepo(t *testing.T) (repo, slot, base string) {
	t.Helper()
	repo = gittest.NewRepo(t)
	base = strings.TrimSpace(gittest.Run(t, repo, "rev-parse", "HEAD"))
	slot = filepath.Join(filepath.Dir(repo), "slot")
	gittest.Run(t, repo, "worktree", "add", "-q", "-b", "try/g-abcdef/cc", slot)
	os.WriteFile(filepath.Join(slot, "a.txt"), []byte("1\n2\n3\n4\n"), 0o644)
	os.WriteFile(filepath.Join(slot, "new.txt"), []byte("new\n"), 0o644)
	os.WriteFile(filepath.Join(slot, ".gitignore"), []byte("*.log\n"), 0o644)
	os.WriteFile(filepath.Join(slot, "debug.log"), []byte("noise\n"), 0o644)
	return repo, slot, base
}

func TestCommitLeftoversAndAcceptMethods(t *testing.T) {
	ctx := context.Background()
	for _, method := range []string{MethodSquash, MethodMerge, MethodRebase} {
		t.Run(method, func(t *testing.T) {
			repo, slot, _ := slotRepo(t)
			c, err := (Procs{}).CommitLeftovers(ctx, slot, "agentctl: work of claude-code (m) session s")
			if err != nil || c == "" {
				t.Fatalf("CommitLeftovers: %q %v", c, err)
			}
			files := gittest.Run(t, slot, "show", "--name-only", "--format=", "HEAD")
			if !strings.Contains(files, "new.txt") || strings.Contains(files, "debug.log") {
				t.Errorf("leftovers commit holds %q: want new.txt, never the ignored debug.log", files)
			}
			if c2, err := (Procs{}).CommitLeftovers(ctx, slot, "x"); err != nil || c2 != "" {
				t.Errorf("second CommitLeftovers: %q %v, want nothing to commit", c2, err)
			}
			// The main branch moved on meanwhile (another file): not a conflict.
			os.WriteFile(filepath.Join(repo, "b.txt"), []byte("b\n"), 0o644)
			gittest.Run(t, repo, "add", "b.txt")
			gittest.Run(t, repo, "commit", "-q", "-m", "b")
			res, err := Accept(ctx, AcceptPlan{Target: repo, Into: "main", Branch: "try/g-abcdef/cc", Slot: slot,
				Method: method, Message: "Subject\n\nBody\n"})
			if err != nil || res.AlreadyIn {
				t.Fatalf("Accept: %+v %v", res, err)
			}
			parents := strings.Fields(gittest.Run(t, repo, "log", "-1", "--format=%P"))
			want := map[string]int{MethodSquash: 1, MethodMerge: 2, MethodRebase: 1}[method]
			if len(parents) != want {
				t.Errorf("%d parents, want %d", len(parents), want)
			}
			if got := gittest.Run(t, repo, "show", "HEAD:a.txt"); got != "1\n2\n3\n4\n" {
				t.Errorf("a.txt on main: %q", got)
			}
			if _, err := os.Stat(filepath.Join(repo, "new.txt")); err != nil {
				t.Errorf("new.txt not in the target worktree: %v", err)
			}
			if st := gittest.Run(t, repo, "status", "--porcelain"); st != "" {
				t.Errorf("target not clean: %s", st)
			}
			if method != MethodRebase {
				if s := strings.TrimSpace(gittest.Run(t, repo, "log", "-1", "--format=%s")); s != "Subject" {
					t.Errorf("subject %q", s)
				}
			}
			if !Contains(ctx, repo, "main", "try/g-abcdef/cc") {
				t.Error("Contains: the accepted branch is not in main")
			}
			// Again: already in, nothing changes.
			head := gittest.Run(t, repo, "rev-parse", "HEAD")
			res, err = Accept(ctx, AcceptPlan{Target: repo, Into: "main", Branch: "try/g-abcdef/cc", Slot: slot, Method: method, Message: "x"})
			if err != nil || !res.AlreadyIn || gittest.Run(t, repo, "rev-parse", "HEAD") != head {
				t.Errorf("second Accept: %+v %v", res, err)
			}
		})
	}
}

func TestAcceptConflictChangesNothing(t *testing.T) {
	ctx := context.Background()
	for _, method := range []string{MethodSquash, MethodMerge, MethodRebase} {
		t.Run(method, func(t *testing.T) {
			repo, slot, _ := slotRepo(t)
			if _, err := (Procs{}).CommitLeftovers(ctx, slot, "w"); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(repo, "a.txt"), []byte("1\n2\n3\nmine\n"), 0o644)
			gittest.Run(t, repo, "commit", "-q", "-am", "mine")
			before := gittest.Run(t, repo, "rev-parse", "HEAD") + gittest.Run(t, repo, "status", "--porcelain")
			slotHead := gittest.Run(t, slot, "rev-parse", "HEAD")
			_, err := Accept(ctx, AcceptPlan{Target: repo, Into: "main", Branch: "try/g-abcdef/cc", Slot: slot, Method: method, Message: "m"})
			var ce *ConflictError
			if !errors.As(err, &ce) || len(ce.Paths) != 1 || ce.Paths[0] != "a.txt" {
				t.Fatalf("Accept: %v, want a conflict in a.txt", err)
			}
			if after := gittest.Run(t, repo, "rev-parse", "HEAD") + gittest.Run(t, repo, "status", "--porcelain"); after != before {
				t.Errorf("target changed: %q, was %q", after, before)
			}
			if gittest.Run(t, slot, "rev-parse", "HEAD") != slotHead || gittest.Run(t, slot, "status", "--porcelain") != "" {
				t.Errorf("the slot changed after the aborted %s", method)
			}
			for _, dir := range []string{repo, slot} {
				if err := inProgress(ctx, dir); err != nil {
					t.Errorf("left an operation in progress: %v", err)
				}
			}
		})
	}
}

// acceptUnderWay is slotRepo with the slot's work committed on its branch:
// the commit an accept would fast-forward the target (repo, at before) to
// (next), and where that accept keeps its marker.
func acceptUnderWay(t *testing.T) (repo, before, next, marker string) {
	t.Helper()
	ctx := context.Background()
	repo, slot, _ := slotRepo(t)
	if _, err := (Procs{}).CommitLeftovers(ctx, slot, "w"); err != nil {
		t.Fatal(err)
	}
	before = strings.TrimSpace(gittest.Run(t, repo, "rev-parse", "HEAD"))
	next = strings.TrimSpace(gittest.Run(t, repo, "rev-parse", "try/g-abcdef/cc"))
	marker, err := markerPath(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	return repo, before, next, marker
}

// An accept killed while it fast-forwarded the target: HEAD old, some files
// new. RecoverAccept resets exactly that, and never a user's own edit.
func TestRecoverAccept(t *testing.T) {
	ctx := context.Background()
	d := Procs{} // no process table: nothing to wait for
	repo, before, next, marker := acceptUnderWay(t)
	half := func() {
		os.WriteFile(marker, []byte(before+" "+next+"\n"), 0o644)
		os.WriteFile(filepath.Join(repo, "a.txt"), []byte("1\n2\n3\n4\n"), 0o644) // the new version
		os.WriteFile(filepath.Join(repo, "new.txt"), []byte("new\n"), 0o644)      // added by the update
	}
	half()
	if ok, err := d.RecoverAccept(ctx, repo); !ok || err != nil {
		t.Fatalf("RecoverAccept: %v %v", ok, err)
	}
	if st := gittest.Run(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("not reset: %s", st)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("marker left")
	}
	// git killed while it wrote a file: the file is a first part of its new
	// version (empty, or cut short). Also reset.
	for _, part := range []string{"", "1\n2"} {
		half()
		os.WriteFile(filepath.Join(repo, "a.txt"), []byte(part), 0o644)
		if ok, err := d.RecoverAccept(ctx, repo); !ok || err != nil {
			t.Fatalf("RecoverAccept with a.txt cut short to %q: %v %v", part, ok, err)
		}
		if st := gittest.Run(t, repo, "status", "--porcelain"); st != "" {
			t.Errorf("a.txt cut short to %q: not reset: %s", part, st)
		}
	}
	// A file that is neither version is the user's: nothing is touched.
	half()
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("my own edit\n"), 0o644)
	if ok, err := d.RecoverAccept(ctx, repo); ok || err != nil {
		t.Fatalf("RecoverAccept over a user's edit: %v %v", ok, err)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "my own edit\n" {
		t.Errorf("the user's edit was touched: %q", b)
	}
	// Done (HEAD moved to the new commit): the marker just goes.
	gittest.Run(t, repo, "checkout", "-q", "a.txt")
	os.Remove(filepath.Join(repo, "new.txt"))
	gittest.Run(t, repo, "merge", "-q", "--ff-only", next)
	if ok, err := d.RecoverAccept(ctx, repo); ok || err != nil {
		t.Fatalf("RecoverAccept after completion: %v %v", ok, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("marker left after completion")
	}
}

// git killed in the fast-forward after it moved the branch but before it let
// go of HEAD.lock: every later git command in the target would refuse. The
// next accept removes the locks made since its marker, and only those.
func TestRecoverAcceptStaleLocks(t *testing.T) {
	ctx := context.Background()
	d := Procs{}
	repo, before, next, marker := acceptUnderWay(t)
	gitDir := filepath.Join(repo, ".git")
	locks := []string{"HEAD.lock", "ORIG_HEAD.lock", "index.lock", "refs/heads/main.lock"}
	for _, tc := range []struct {
		name     string
		head     string        // where the killed update left HEAD
		lockAge  time.Duration // how long before the marker the locks were made
		wantGone bool
	}{
		{"branch moved, HEAD.lock held", next, 0, true},
		{"nothing moved yet", before, 0, true},
		{"locks older than the marker are not ours", next, time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gittest.Run(t, repo, "reset", "-q", "--hard", tc.head)
			os.WriteFile(marker, []byte(before+" "+next+"\n"), 0o644)
			mt := time.Now()
			os.Chtimes(marker, mt, mt)
			for _, l := range locks {
				p := filepath.Join(gitDir, l)
				os.WriteFile(p, []byte(tc.head+"\n"), 0o644)
				os.Chtimes(p, mt.Add(-tc.lockAge), mt.Add(-tc.lockAge))
			}
			if _, err := d.RecoverAccept(ctx, repo); err != nil {
				t.Fatal(err)
			}
			for _, l := range locks {
				_, err := os.Stat(filepath.Join(gitDir, l))
				if gone := err != nil; gone != tc.wantGone {
					t.Errorf("%s: gone=%v, want %v", l, gone, tc.wantGone)
				}
				os.Remove(filepath.Join(gitDir, l))
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("marker left")
			}
			if got := strings.TrimSpace(gittest.Run(t, repo, "rev-parse", "HEAD")); got != tc.head {
				t.Errorf("HEAD is %s, want %s", got, tc.head)
			}
		})
	}
}

// A git still working in the target (the orphan of an accept killed alone)
// is waited for; one that never ends is a clear refusal that names it, and
// nothing is touched meanwhile.
func TestRecoverAcceptWaitsForGit(t *testing.T) {
	ctx := context.Background()
	repo, _, _ := slotRepo(t)
	head := strings.TrimSpace(gittest.Run(t, repo, "rev-parse", "HEAD"))
	marker, _ := markerPath(ctx, repo)
	lock := filepath.Join(repo, ".git", "HEAD.lock")
	real, _ := filepath.EvalSymlinks(repo)
	table := func(running bool) *proc.Fake {
		f := &proc.Fake{Cwds: map[int]string{7: real, 8: "/elsewhere", 9: filepath.Join(real, "sub")}}
		f.Procs = []proc.Process{{PID: 8, Comm: "git"}, {PID: 10, Comm: "vim"}}
		if running {
			f.Procs = append(f.Procs, proc.Process{PID: 9, Comm: "git"})
		}
		return f
	}
	for _, tc := range []struct {
		name    string
		endsIn  int // snapshots until the git ends; -1 never
		wantErr bool
	}{
		{"no git there", 0, false},
		{"git ends", 3, false},
		{"git never ends", -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(marker, []byte(head+" "+head+"\n"), 0o644)
			os.WriteFile(lock, nil, 0o644)
			snaps, sleeps := 0, 0
			d := Procs{
				Snapshot: func() proc.Table {
					snaps++
					return table(tc.endsIn < 0 || snaps <= tc.endsIn)
				},
				Sleep: func(context.Context, time.Duration) error { sleeps++; return nil },
			}
			_, err := d.RecoverAccept(ctx, repo)
			var ge *GitRunningError
			if got := errors.As(err, &ge); got != tc.wantErr {
				t.Fatalf("err = %v, want a GitRunningError: %v", err, tc.wantErr)
			}
			_, lerr := os.Stat(lock)
			if tc.wantErr {
				if ge.PID != 9 || !strings.Contains(err.Error(), "pid 9") {
					t.Errorf("error names pid %d: %v", ge.PID, err)
				}
				if lerr != nil {
					t.Error("HEAD.lock removed while a git still works in the target")
				}
				if sleeps != int(gitWait/(50*time.Millisecond)) {
					t.Errorf("waited %d polls", sleeps)
				}
			} else if lerr == nil {
				t.Error("HEAD.lock left after the git ended")
			}
			os.Remove(lock)
		})
	}
}

func TestWorktreeTreeIgnoresHowWorkIsCommitted(t *testing.T) {
	ctx := context.Background()
	_, slot, _ := slotRepo(t)
	t1, err := WorktreeTree(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	if st := gittest.Run(t, slot, "status", "--porcelain"); !strings.Contains(st, "?? new.txt") {
		t.Errorf("WorktreeTree touched the index: %s", st)
	}
	if _, err := (Procs{}).CommitLeftovers(ctx, slot, "w"); err != nil {
		t.Fatal(err)
	}
	if t2, _ := WorktreeTree(ctx, slot); t2 != t1 {
		t.Errorf("tree changed by committing the same content: %s → %s", t1, t2)
	}
	os.WriteFile(filepath.Join(slot, "new.txt"), []byte("changed\n"), 0o644)
	if t3, _ := WorktreeTree(ctx, slot); t3 == t1 {
		t.Error("tree did not change with the content")
	}
}

// An untracked file of the target in the way of the fast-forward: git refuses
// before changing anything, and so does Accept.
func TestAcceptUntrackedInTheWay(t *testing.T) {
	ctx := context.Background()
	repo, slot, _ := slotRepo(t)
	if _, err := (Procs{}).CommitLeftovers(ctx, slot, "w"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(repo, "new.txt"), []byte("mine\n"), 0o644)
	head := gittest.Run(t, repo, "rev-parse", "HEAD")
	_, err := Accept(ctx, AcceptPlan{Target: repo, Into: "main", Branch: "try/g-abcdef/cc", Slot: slot, Method: MethodSquash, Message: "m"})
	var ue *UpdateRefusedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "new.txt") {
		t.Fatalf("Accept: %v, want git's refusal naming new.txt", err)
	}
	if gittest.Run(t, repo, "rev-parse", "HEAD") != head {
		t.Error("HEAD moved")
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "new.txt")); string(b) != "mine\n" {
		t.Errorf("the user's file was overwritten: %q", b)
	}
	if marker, _ := markerPath(ctx, repo); isFile(marker) {
		t.Error("marker left after a refused update")
	}
}

// Each git operation in progress is refused by name, with the command that
// ends it.
func TestInProgressNamesTheOperation(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	for _, tc := range []struct{ file, how string }{
		{"MERGE_HEAD", "merge --abort"},
		{"rebase-merge", "rebase --abort"},
		{"rebase-apply", "rebase --abort"},
		{"CHERRY_PICK_HEAD", "cherry-pick --abort"},
		{"REVERT_HEAD", "revert --abort"},
	} {
		p := filepath.Join(repo, ".git", tc.file)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		err := inProgress(ctx, repo)
		var be *GitBusyError
		if !errors.As(err, &be) || be.What != tc.file || !strings.Contains(err.Error(), tc.how) {
			t.Errorf("%s: %v", tc.file, err)
		}
		os.Remove(p)
	}
	if err := inProgress(ctx, repo); err != nil {
		t.Errorf("nothing in progress: %v", err)
	}
}
