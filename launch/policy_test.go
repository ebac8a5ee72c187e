package launch

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/meta"
)

func TestStoppable(t *testing.T) {
	now := time.Now()
	live := Seen{ID: "s1", Status: "running", Alive: true, PID: 42}
	with := func(s Seen, f func(*Seen)) Seen { f(&s); return s }
	for _, c := range []struct {
		name  string
		drv   Driver
		s     Seen
		force bool
		want  string // "" allowed, else a substring of the refusal
	}{
		{"registry", Claude{}, with(live, func(s *Seen) { s.Evidence = EvidenceRegistry }), false, ""},
		{"argv", Codex{}, with(live, func(s *Seen) { s.Evidence = EvidenceArgv }), false, ""},
		{"launch record", Pi{}, with(live, func(s *Seen) { s.Evidence = EvidenceLaunchRecord }), false, ""},
		{"process scan", Claude{}, with(live, func(s *Seen) { s.Evidence = EvidenceProcess }), false, "only inferred (process); check it with `agentctl status s1`"},
		{"process scan forced", Claude{}, with(live, func(s *Seen) { s.Evidence = EvidenceProcess }), true, ""},
		{"transcript never", OpenCode{}, with(live, func(s *Seen) { s.Evidence = "transcript" }), true, "only inferred (transcript)"},
		{"stopped", Claude{}, Seen{ID: "s1", Status: "stopped"}, true, "s1 is not running (stopped); nothing to stop"},
		{"unknown", Claude{}, Seen{ID: "s1", Status: "unknown", Unknown: true, Evidence: "none"}, true, "no verified process (status unknown, evidence none)"},
		{"gateway own run", OpenClaw{}, Seen{ID: "k", Status: "running", Alive: true, Launch: &meta.Launch{Gateway: &meta.GatewayInfo{RunID: "r"}}}, false, ""},
		{"gateway foreign run", OpenClaw{}, Seen{ID: "k", Status: "running", Alive: true}, false, "not started by agentctl"},
		{"gateway ended record", OpenClaw{}, Seen{ID: "k", Status: "running", Alive: true, Launch: &meta.Launch{EndedAt: &now, Gateway: &meta.GatewayInfo{}}}, false, "use --force"},
		{"gateway forced", OpenClaw{}, Seen{ID: "k", Status: "running", Alive: true}, true, ""},
		{"gateway idle", OpenClaw{}, Seen{ID: "k", Status: "stopped"}, true, "k is not running (stopped)"},
	} {
		err := c.drv.Stoppable(c.s, c.force)
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestResumable(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name  string
		drv   Driver
		s     Seen
		force bool
		busy  bool
		want  string // error substring, or "" for ok
	}{
		{"ended", Claude{}, Seen{ID: "s", Status: "stopped", Cwd: dir}, false, false, ""},
		{"live", Claude{}, Seen{ID: "s", Status: "running", Alive: true, PID: 9, Evidence: EvidenceLaunchRecord, Cwd: dir}, true, true,
			"s is still running (pid 9, evidence launch-record); wait for it or stop it first"},
		{"inferred", Codex{}, Seen{ID: "s", Status: "running", Alive: true, Evidence: EvidenceProcess, Cwd: dir}, false, true, "is still running"},
		{"inferred forced", Codex{}, Seen{ID: "s", Status: "running", Alive: true, Evidence: EvidenceProcess, Cwd: dir}, true, false, ""},
		{"no cwd", Pi{}, Seen{ID: "s", Status: "stopped"}, false, false, "no recorded start directory"},
		{"cwd gone", Pi{}, Seen{ID: "s", Adapter: "pi", Status: "stopped", Cwd: dir + "/gone"}, false, false, "pi only resumes a session from its own directory"},
		{"gateway", OpenClaw{}, Seen{ID: "k", Status: "idle"}, false, false, ""},
		{"gateway live", OpenClaw{}, Seen{ID: "k", Status: "running", Alive: true, Evidence: "gateway"}, true, true, "k is still running"},
	} {
		cwd, err := c.drv.Resumable(c.s, c.force)
		var be *BusyError
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) || errors.As(err, &be) != c.busy {
			t.Errorf("%s: %v (busy %v), want %q (busy %v)", c.name, err, be != nil, c.want, c.busy)
		}
		if err == nil && c.drv.Gateway() != (cwd == "") {
			t.Errorf("%s: cwd %q", c.name, cwd)
		}
	}
}

func TestWorkdir(t *testing.T) {
	for _, c := range []struct {
		drv                    Driver
		cwd, wt, cfg, want     string
		runsThere, inputRefuse bool
	}{
		{Claude{}, "", "", "/cfg", "/cfg", true, false},
		{Claude{}, "/c", "", "/cfg", "/c", true, false},
		{Claude{}, "", "/wt", "/cfg", "/wt", true, false},
		{OpenClaw{}, "", "", "/cfg", "", false, false},
		{OpenClaw{}, "/c", "", "", "", false, true},
		{OpenClaw{}, "", "/wt", "", "", false, true},
	} {
		dir, runs, err := c.drv.Workdir(c.cwd, c.wt, c.cfg)
		var ie *InputError
		if dir != c.want || runs != c.runsThere || errors.As(err, &ie) != c.inputRefuse {
			t.Errorf("%s.Workdir(%q, %q, %q) = %q, %v, %v", c.drv.Name(), c.cwd, c.wt, c.cfg, dir, runs, err)
		}
	}
}
