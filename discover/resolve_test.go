package discover

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestResolve(t *testing.T) {
	ss := []Session{
		{ID: "75098152-d081-42b6-b9b6-e7787f9a8747", Adapter: "claude-code", Cwd: "/home/dev/api-server"},
		{ID: "7f04c4ca-6b23-48fb-8d29-ea8f0ec1d19d", Adapter: "claude-code", Cwd: "/home/dev/My.Project dir"},
		{ID: "7e3394de-1ab5-4927-b7d8-0b4531418047", Adapter: "claude-code", Cwd: "/home/dev/notes"},
		{ID: "ses_e0513e0d3ffeb4Nc0mnqJKxBsR", Adapter: "opencode", Cwd: "/home/dev/frontend", LaunchID: "l-abc123"},
		{ID: "7", Adapter: "pi", Cwd: "/x"}, // an exact id that is also a prefix of others
	}
	tests := []struct {
		arg     string
		want    string
		errType string
		errText string
	}{
		{arg: "75098152-d081-42b6-b9b6-e7787f9a8747", want: "75098152-d081-42b6-b9b6-e7787f9a8747"},
		{arg: "750", want: "75098152-d081-42b6-b9b6-e7787f9a8747"},
		{arg: "7f0", want: "7f04c4ca-6b23-48fb-8d29-ea8f0ec1d19d"},
		{arg: "7", want: "7"}, // exact wins over prefix
		{arg: "ses_", want: "ses_e0513e0d3ffeb4Nc0mnqJKxBsR"},
		{arg: "l-abc123", want: "ses_e0513e0d3ffeb4Nc0mnqJKxBsR"},
		{arg: "7e", want: "7e3394de-1ab5-4927-b7d8-0b4531418047"},
		{arg: "7f", want: "7f04c4ca-6b23-48fb-8d29-ea8f0ec1d19d"},
		{arg: "75", want: "75098152-d081-42b6-b9b6-e7787f9a8747"},
		{arg: "zzz", errType: "notfound", errText: "session not found: zzz"},
		{arg: "", errType: "bad", errText: "it is empty"},
		{arg: "/", errType: "bad", errText: "looks like a path"},
		{arg: "..", errType: "bad", errText: "looks like a path"},
		{arg: "a/b", errType: "bad", errText: "looks like a path"},
	}
	for _, tt := range tests {
		got, err := Resolve(ss, tt.arg)
		switch tt.errType {
		case "":
			if err != nil || got.ID != tt.want {
				t.Errorf("Resolve(%q) = %q, %v; want %q", tt.arg, got.ID, err, tt.want)
			}
		case "notfound":
			var nf *NotFoundError
			if !errors.As(err, &nf) || err.Error() != tt.errText {
				t.Errorf("Resolve(%q) err = %v; want not-found %q", tt.arg, err, tt.errText)
			}
		case "bad":
			var bad *BadIDError
			if !errors.As(err, &bad) || !strings.Contains(err.Error(), tt.errText) {
				t.Errorf("Resolve(%q) err = %v; want bad id containing %q", tt.arg, err, tt.errText)
			}
		}
	}
}

func TestResolveAmbiguousListsCandidates(t *testing.T) {
	ss := []Session{
		{ID: "63a9dd20-452d", Adapter: "claude-code", Cwd: "/home/dev/webapp"},
		{ID: "6f00", Adapter: "codex", Cwd: "/home/dev/billing"},
		{ID: "6abc", Adapter: "pi", Cwd: "/home/dev/api-server"},
	}
	_, err := Resolve(ss, "6")
	var am *AmbiguousError
	if !errors.As(err, &am) {
		t.Fatalf("err = %v, want ambiguous", err)
	}
	want := "ambiguous session id '6' matches 3 sessions:\n" +
		"  63a9dd20-452d claude-code /home/dev/webapp\n" +
		"  6f00 codex /home/dev/billing\n" +
		"  6abc pi /home/dev/api-server"
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	// More than 10 candidates are cut with a count.
	var many []Session
	for i := 0; i < 12; i++ {
		many = append(many, Session{ID: "ab" + strings.Repeat("x", i), Adapter: "codex"})
	}
	_, err = Resolve(many, "a")
	if !strings.Contains(err.Error(), "… and 2 more") || strings.Count(err.Error(), "\n") != 11 {
		t.Errorf("12 candidates: %q", err.Error())
	}
}

func TestFilter(t *testing.T) {
	now := time.Date(2026, 11, 20, 22, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	ss := []Session{
		{ID: "run", Status: StatusRunning, Cwd: "/home/dev/webapp", LastActivity: at(time.Minute)},
		{ID: "old-stopped", Status: StatusStopped, Cwd: "/home/dev/webapp/sub", LastActivity: at(10 * 24 * time.Hour)},
		{ID: "stopped", Status: StatusStopped, Cwd: "/home/dev/webapp-other", LastActivity: at(time.Hour)},
		{ID: "unk", Status: StatusUnknown, Cwd: "/home/dev/x", Group: "g-abcdef"},
		{ID: "failed", Status: StatusFailed, Cwd: "/home/dev/x", LastActivity: at(2 * time.Hour)},
	}
	ids := func(ss []Session) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return out
	}
	tests := []struct {
		name string
		f    Filter
		want []string
	}{
		{"alive only", Filter{}, []string{"run", "unk"}},
		{"all in window", Filter{All: true, Since: 7 * 24 * time.Hour}, []string{"run", "stopped", "unk", "failed"}},
		{"all, 30d", Filter{All: true, Since: 30 * 24 * time.Hour}, []string{"run", "old-stopped", "stopped", "unk", "failed"}},
		{"status", Filter{Statuses: []string{StatusFailed}, Since: 7 * 24 * time.Hour}, []string{"failed"}},
		{"cwd is a path prefix, not a string prefix", Filter{All: true, Cwd: "/home/dev/webapp", Since: 30 * 24 * time.Hour}, []string{"run", "old-stopped"}},
		{"group", Filter{All: true, Group: "g-abcdef"}, []string{"unk"}},
	}
	for _, tt := range tests {
		tt.f.Now = now
		if diff := cmp.Diff(tt.want, ids(tt.f.Apply(ss))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// Lookup is CheckID, FindFor and Resolve behind one call: a bad id reads
// nothing, keep drops sessions before resolving, and the errors keep their
// types for the exit codes.
func TestLookup(t *testing.T) {
	a := &fakeAdapter{name: "pi", ss: []Session{sess("01a1faea-1", "pi"), sess("01a1faea-2", "pi-rust")}}
	ctx := context.Background()
	var bad *BadIDError
	asked := &fakeAdapter{name: "pi", warns: []string{"asked"}}
	if _, res, err := Lookup(ctx, testEnv(), []Adapter{asked}, time.Second, "../x", nil); !errors.As(err, &bad) || len(res.Warnings) != 0 {
		t.Errorf("bad id: err %v, adapter asked: %q", err, res.Warnings)
	}
	var am *AmbiguousError
	if _, res, err := Lookup(ctx, testEnv(), []Adapter{a}, time.Second, "01a1faea", nil); !errors.As(err, &am) || len(res.Sessions) != 2 {
		t.Errorf("ambiguous: err %v, sessions %d", err, len(res.Sessions))
	}
	onlyRust := func(s *Session) bool { return s.Adapter == "pi-rust" }
	if s, res, err := Lookup(ctx, testEnv(), []Adapter{a}, time.Second, "01a1faea", onlyRust); err != nil || s.ID != "01a1faea-2" || !res.Up["pi"] {
		t.Errorf("keep: %+v, %v", s, err)
	}
	var nf *NotFoundError
	if _, _, err := Lookup(ctx, testEnv(), []Adapter{a}, time.Second, "ffff", nil); !errors.As(err, &nf) {
		t.Errorf("not found: %v", err)
	}
}
