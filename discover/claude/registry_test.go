package claude

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/proc"
)

const (
	idScratch = "26c4fe79-442c-4df9-8a1c-fd975e69e040" // stale registry 12509
	idInfra   = "491a4bda-98b7-49ec-936d-04a53f8571e6" // busy registry 14535
	idCliTool = "ff38fc66-0e6f-49a9-bddf-965cd7d30d7f" // 2.1.329 registry 22559 (pidDomain)
	idTUI329  = "d957d5fe-663c-4e98-a802-1b18889c112d"
	idWebapp  = "63a9dd20-452d-46cb-844e-bd4800ad2458"
	idFork    = "9ee4fdd2-41ff-4937-a320-74e0a6f6767c"
	idBefore  = "a120e32a-dc4b-4674-b6da-a98024f2d6f8" // notes, before /clear
	idAfter   = "7e3394de-1ab5-4927-b7d8-0b4531418047" // notes, after /clear
)

// liveness is the part of a session the status rules decide.
type liveness struct {
	Status, Evidence, Detail string
	Inferred                 bool
	PID                      int
}

func livenessOf(s discover.Session) liveness {
	return liveness{s.Status, s.Evidence, s.EvidenceDetail, s.Inferred, s.PID}
}

// tickAt is the fake process start tick for an epoch-ms time (see testAdapter).
func tickAt(ms int64) uint64 { return uint64((ms - bootMs) / 10) }

func TestRegistryFixtures(t *testing.T) {
	tests := []struct {
		name  string
		procs *proc.Fake
		pidNS string
		id    string
		want  liveness
	}{
		{"12509 left behind by SIGKILL", &proc.Fake{}, pidNS, idScratch,
			liveness{discover.StatusFailed, discover.EvidenceStaleRegistry, "sessions/12509.json: pid 12509 is gone; killed or crashed", false, 0}},
		{"14535 busy and alive", &proc.Fake{Procs: []proc.Process{{PID: 14535, Comm: "claude", StartTicks: 25479}}}, pidNS, idInfra,
			liveness{discover.StatusRunning, discover.EvidenceRegistry, "sessions/14535.json procStart=25479 matches", false, 14535}},
		{"14535 pid recycled", &proc.Fake{Procs: []proc.Process{{PID: 14535, Comm: "bash", StartTicks: 99999}}}, pidNS, idInfra,
			liveness{discover.StatusFailed, discover.EvidenceStaleRegistry, "sessions/14535.json: pid 14535 was recycled (procStart 25479, running process started at 99999); killed or crashed", false, 0}},
		{"22559 from another pid namespace", &proc.Fake{Procs: []proc.Process{{PID: 22559, Comm: "claude", StartTicks: 43505}}}, "pid:[4026532999]", idCliTool,
			liveness{discover.StatusUnknown, discover.EvidenceRegistry, "sessions/22559.json: foreign PID namespace (pidDomain linux:0123456789abcdef0123456789abcdef:pid:[4026531836], here linux:0123456789abcdef0123456789abcdef:pid:[4026532999])", false, 0}},
		{"22559 same namespace, busy", &proc.Fake{Procs: []proc.Process{{PID: 22559, Comm: "claude", StartTicks: 43505}}}, pidNS, idCliTool,
			liveness{discover.StatusRunning, discover.EvidenceRegistry, "sessions/22559.json procStart=43505 matches", false, 22559}},
		{"no process table", &proc.Fake{NoProcs: true}, pidNS, idInfra,
			liveness{discover.StatusUnknown, discover.EvidenceRegistry, "sessions/14535.json: no process table to verify pid 14535", false, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t, copyHome(t), tt.procs)
			a := testAdapter()
			a.PidNS = func() string { return tt.pidNS }
			got := discovertest.DiscoverAll(t, a, env.Env)
			if diff := cmp.Diff(tt.want, livenessOf(got[tt.id])); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func writeRegistry(t *testing.T, home string, pid int, body string) {
	t.Helper()
	p := filepath.Join(home, ".claude", "sessions", itoa(pid)+".json")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string     { return strconv.Itoa(n) }
func fmtInt(n int64) string { return strconv.FormatInt(n, 10) }

// TestRegistryOnlySession: an unprompted TUI has a registry entry and no
// transcript; it is listed idle without a prompt. A stale entry without a
// transcript has nothing to list.
func TestRegistryOnlySession(t *testing.T) {
	home := copyHome(t)
	const fresh, dead = "0b0b0b0b-1111-4222-8333-444455556666", "0c0c0c0c-1111-4222-8333-444455556666"
	writeRegistry(t, home, 31337, `{"pid":31337,"sessionId":"`+fresh+`","cwd":"/home/dev/new project","startedAt":1795211130000,"procStart":"32460","version":"2.1.197","kind":"interactive","entrypoint":"cli","name":"new-ab","nameSource":"derived"}`)
	writeRegistry(t, home, 31338, `{"pid":31338,"sessionId":"`+dead+`","cwd":"/home/dev/x","startedAt":1795211130000,"procStart":"32460","version":"2.1.197","kind":"interactive","entrypoint":"cli"}`)
	env := newEnv(t, home, &proc.Fake{Procs: []proc.Process{{PID: 31337, Comm: "claude", StartTicks: 32460}}})
	got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
	s, ok := got[fresh]
	if !ok {
		t.Fatalf("registry-only session missing; have %v", sortedIDs(got))
	}
	started := time.Date(2026, 11, 20, 21, 45, 30, 0, time.UTC)
	want := discover.Session{ID: fresh, Adapter: Name, Status: discover.StatusIdle, Evidence: discover.EvidenceRegistry,
		EvidenceDetail: "sessions/31337.json procStart=32460 matches; no prompt yet", PID: 31337, Cwd: "/home/dev/new project",
		StartedAt: &started, LastActivity: &started, AgentVersion: "2.1.197", Entrypoint: "cli"}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, ok := got[dead]; ok {
		t.Errorf("stale registry entry without transcript %s was listed", dead)
	}
}

// TestRegistryWithoutProcStart: older entries lack procStart; the process must
// have started by the session's startedAt (+2 s), and the result is inferred.
func TestRegistryWithoutProcStart(t *testing.T) {
	const startedAt = 1795211064000 // after 491a4bda's prompt
	for _, tt := range []struct {
		name  string
		start int64
		want  liveness
	}{
		{"started before the session", startedAt - 5000, liveness{discover.StatusRunning, discover.EvidenceRegistry,
			"sessions/14535.json: no procStart; pid 14535 started before the session (inferred)", true, 14535}},
		{"started after the session", startedAt + 60000, liveness{discover.StatusFailed, discover.EvidenceStaleRegistry,
			"sessions/14535.json: pid 14535 was recycled (started after the session); killed or crashed", false, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := copyHome(t)
			writeRegistry(t, home, 14535, `{"pid":14535,"sessionId":"`+idInfra+`","cwd":"/home/dev/infra","startedAt":`+fmtInt(startedAt)+`,"version":"2.1.197","kind":"interactive","entrypoint":"cli","status":"busy"}`)
			env := newEnv(t, home, &proc.Fake{Procs: []proc.Process{{PID: 14535, Comm: "claude", StartTicks: tickAt(tt.start)}}})
			got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
			if diff := cmp.Diff(tt.want, livenessOf(got[idInfra])); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestSupersededAfterClear: the notes process /clear'ed from a120e32a to
// 7e3394de; its registry now names the new session, so the old one is stopped.
func TestSupersededAfterClear(t *testing.T) {
	const startedAt = 1795211090000 // 21:44:50, before a120e32a's prompt
	reg := `{"pid":777,"sessionId":"` + idAfter + `","cwd":"/home/dev/notes","startedAt":` + fmtInt(startedAt) + `,"procStart":"` + fmtInt(int64(tickAt(startedAt))) + `","version":"2.1.197","kind":"interactive","entrypoint":"cli","status":"idle"}`
	for _, tt := range []struct {
		name string
		argv []string
	}{
		{"by cwd and time", []string{"claude"}},
		{"by argv", []string{"claude", "--resume", idBefore}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := copyHome(t)
			writeRegistry(t, home, 777, reg)
			env := newEnv(t, home, &proc.Fake{
				Procs: []proc.Process{{PID: 777, Comm: "claude", StartTicks: tickAt(startedAt)}},
				Args:  map[int][]string{777: tt.argv},
				Cwds:  map[int]string{777: "/home/dev/notes"},
			})
			got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
			want := map[string]liveness{
				idAfter:  {discover.StatusIdle, discover.EvidenceRegistry, "sessions/777.json procStart=" + fmtInt(int64(tickAt(startedAt))) + " matches", false, 777},
				idBefore: {discover.StatusStopped, discover.EvidenceRegistry, "superseded by " + idAfter, false, 0},
			}
			for id, w := range want {
				if diff := cmp.Diff(w, livenessOf(got[id])); diff != "" {
					t.Errorf("%s (-want +got):\n%s", id[:8], diff)
				}
			}
		})
	}
}

// TestRegistryUnusable: entries that do not parse (after one retry), whose pid is
// not their file name, or that name no session are skipped; nothing fails.
func TestRegistryUnusable(t *testing.T) {
	home := copyHome(t)
	writeRegistry(t, home, 4444, `{"pid":4444,"sessionId":"`+idWebapp+`",`) // torn write
	writeRegistry(t, home, 4445, `{"pid":9999,"sessionId":"`+idWebapp+`","procStart":"1"}`)
	writeRegistry(t, home, 4446, `{"pid":4446,"procStart":"1"}`)
	env := newEnv(t, home, &proc.Fake{Procs: []proc.Process{{PID: 4444, StartTicks: 1}, {PID: 4445, StartTicks: 1}, {PID: 9999, StartTicks: 1}, {PID: 4446, StartTicks: 1}}})
	start := time.Now()
	got := discovertest.DiscoverAll(t, testAdapter(), env.Env)
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("took %v: the torn entry was not retried after 50 ms", d)
	}
	if diff := cmp.Diff(liveness{discover.StatusStopped, discover.EvidenceTranscript, "", false, 0}, livenessOf(got[idWebapp])); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(got) != len(fixtureFacts) {
		t.Errorf("%d sessions, want %d", len(got), len(fixtureFacts))
	}
}
