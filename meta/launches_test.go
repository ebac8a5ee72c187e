package meta_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func tp(t time.Time) *time.Time { return &t }

// A launch record is evicted LaunchTTL after its session ended — never while its
// agent PID is alive — and its log goes with it (only logs under logs/).
func TestLaunchEviction(t *testing.T) {
	s := newStore(t)
	now := t0
	s.Now = func() time.Time { return now }
	alive := map[int]uint64{100: 7} // pid 100 is alive with start 7
	s.Procs = proc.Starts(alive)
	logDir := filepath.Join(s.Dir, "logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "precious.log")
	mk := func(name string) string {
		p := filepath.Join(logDir, name+".log")
		if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := os.WriteFile(outside, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	recs := []meta.Launch{
		{ID: "old-dead", Log: mk("old-dead"), LaunchedAt: t0.Add(-10 * 24 * time.Hour), EndedAt: tp(t0.Add(-8 * 24 * time.Hour)), PID: 200, StartTicks: 1},
		{ID: "old-alive", Log: mk("old-alive"), LaunchedAt: t0.Add(-10 * 24 * time.Hour), EndedAt: tp(t0.Add(-8 * 24 * time.Hour)), PID: 100, StartTicks: 7},
		{ID: "old-recycled", Log: mk("old-recycled"), LaunchedAt: t0.Add(-10 * 24 * time.Hour), EndedAt: tp(t0.Add(-8 * 24 * time.Hour)), PID: 100, StartTicks: 8},
		{ID: "recent", Log: mk("recent"), LaunchedAt: t0.Add(-7 * 24 * time.Hour), EndedAt: tp(t0.Add(-6 * 24 * time.Hour))},
		{ID: "running", Log: mk("running"), LaunchedAt: t0.Add(-30 * 24 * time.Hour), PID: 100, StartTicks: 7},
		{ID: "never-ended", Log: outside, LaunchedAt: t0.Add(-30 * 24 * time.Hour)},
	}
	if err := s.UpdateLaunches(func(l *meta.Launches) (bool, error) { l.Records = recs; return true, nil }); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadLaunches()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if diff := cmp.Diff([]string{"old-alive", "recent", "running"}, ids); diff != "" {
		t.Errorf("kept records (-want +got):\n%s", diff)
	}
	for name, want := range map[string]bool{"old-dead": false, "old-recycled": false, "old-alive": true, "recent": true, "running": true} {
		_, err := os.Stat(filepath.Join(logDir, name+".log"))
		if exists := err == nil; exists != want {
			t.Errorf("log %s exists = %v, want %v", name, exists, want)
		}
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("a record pointing outside logs/ made agentctl delete %s", outside)
	}

	// With a shorter configured TTL, "recent" goes too, lazily on EvictLaunches.
	s.ApplyConfig(&meta.Config{LaunchTTL: "2d"})
	if err := s.EvictLaunches(); err != nil {
		t.Fatal(err)
	}
	got, _ = s.ReadLaunches()
	if len(got) != 2 {
		t.Errorf("after launch_ttl 2d: %d records, want 2 (old-alive, running)", len(got))
	}
}

func TestEvictLaunchesWritesOnlyWhenNeeded(t *testing.T) {
	s := newStore(t)
	s.Now = func() time.Time { return t0 }
	if err := s.EvictLaunches(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Path(meta.LaunchesFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("EvictLaunches created launches.json with nothing to evict")
	}
}

func TestApplyConfigBadTTL(t *testing.T) {
	s := newStore(t)
	var warned string
	s.Warn = func(f string, a ...any) { warned = f }
	s.ApplyConfig(&meta.Config{LaunchTTL: "soon"})
	if s.LaunchTTL != meta.DefaultLaunchTTL || !strings.Contains(warned, "launch_ttl") {
		t.Errorf("bad launch_ttl: ttl=%v warning=%q", s.LaunchTTL, warned)
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "1.5d": 36 * time.Hour, "90m": 90 * time.Minute, "10s": 10 * time.Second, ".5d": 12 * time.Hour, " 2d ": 48 * time.Hour} {
		got, err := meta.ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "x7d", "7", "soon", "1xd", "1x", ".d", "infd", "NaNd", "1e3d", "0x1p4d", "-1d", "1..5d", "1e300d"} {
		if _, err := meta.ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) succeeded", in)
		}
	}
}

// A corrupt launches.json is moved aside with a warning, never silently reset.
func TestCorruptLaunchesMovedAside(t *testing.T) {
	s := newStore(t)
	s.Now = func() time.Time { return t0.Add(time.Minute) } // the record is fresh, whenever the test runs
	var warned []string
	s.Warn = func(f string, a ...any) { warned = append(warned, f) }
	if err := s.EnsureDir(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path(meta.LaunchesFile), []byte(`{"schema":1,"launches":[{"id":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadLaunches(); err == nil {
		t.Fatal("reading a corrupt file succeeded")
	}
	if err := s.UpdateLaunches(func(l *meta.Launches) (bool, error) {
		l.Records = append(l.Records, meta.Launch{ID: "new", LaunchedAt: t0})
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	m, _ := filepath.Glob(s.Path(meta.LaunchesFile) + ".corrupt-*")
	if len(m) != 1 || len(warned) != 1 {
		t.Fatalf("corrupt file: aside=%v warnings=%v", m, warned)
	}
	got, err := s.ReadLaunches()
	if err != nil || len(got) != 1 {
		t.Errorf("after recovery: %v, %v", got, err)
	}
}

func TestOutboxExpiry(t *testing.T) {
	s := newStore(t)
	now := t0
	s.Now = func() time.Time { return now }
	s.Procs = proc.Starts{}
	var warned []string
	s.Warn = func(f string, a ...any) { warned = append(warned, f) }
	add := func(id string, created time.Time) {
		if err := s.UpdateOutbox(func(o *meta.Outbox) (bool, error) {
			o.Deliveries = append(o.Deliveries, meta.Delivery{ID: id, URL: "http://127.0.0.1:1/", Body: `{}`, CreatedAt: created})
			return true, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	add("old", t0.Add(-8*24*time.Hour))
	add("new", t0)
	got, err := s.ReadOutbox()
	if err != nil || len(got) != 1 || got[0].ID != "new" {
		t.Fatalf("outbox = %+v, %v; want only the new delivery", got, err)
	}
	if len(warned) != 1 {
		t.Errorf("dropping an expired delivery must warn; warnings %v", warned)
	}
}

// A launch record keeps the home it was launched with (launch --home); a
// record without one (launched without --home, or written before the field
// existed) reads as "" and is written without the key.
func TestLaunchHome(t *testing.T) {
	s := newStore(t)
	s.Now = func() time.Time { return t0 }
	if err := s.EnsureDir(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, meta.LaunchesFile), []byte(`{"schema":1,"launches":[{"id":"l-old","kind":"launch","adapter":"claude-code","cwd":"/p","launched_at":"2026-11-20T12:00:00Z"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateLaunches(func(ls *meta.Launches) (bool, error) {
		ls.Records = append(ls.Records, meta.Launch{ID: "l-new", Kind: "launch", Adapter: "claude-code", Cwd: "/p", Home: "/home/alice", LaunchedAt: t0})
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	recs, err := s.ReadLaunches()
	if err != nil {
		t.Fatal(err)
	}
	var homes []string
	for _, r := range recs {
		homes = append(homes, r.ID+"="+r.Home)
	}
	if diff := cmp.Diff([]string{"l-old=", "l-new=/home/alice"}, homes); diff != "" {
		t.Errorf("homes (-want +got):\n%s", diff)
	}
	b, err := os.ReadFile(filepath.Join(s.Dir, meta.LaunchesFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"home"`); n != 1 {
		t.Errorf(`launches.json has %d "home" keys, want 1 (omitempty):\n%s`, n, b)
	}
}
