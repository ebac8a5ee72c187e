package launch

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// launch pi --keep-open: RPC mode, no -p, the prompt never in argv; refused
// for a resume and for agents that cannot be kept open (naming pi).
func TestPiKeepOpenPlan(t *testing.T) {
	pi := execBin(t, "pi")
	r := &Request{Kind: KindLaunch, Cwd: "/w", KeepOpen: true, Model: "fakeoai/fake-model", Prompt: "-x secret",
		Environ: []string{"AGENTCTL_PI_BIN=" + pi}}
	p, err := Pi{}.Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"--mode", "rpc", "--model", "fakeoai/fake-model"}, p.Args); diff != "" || !p.Input {
		t.Errorf("kept-open pi argv (-want +got):\n%s; input %v", diff, p.Input)
	}
	var ie *InputError
	for _, sp := range []Spec{{Adapter: "claude-code", KeepOpen: true}, {Adapter: "pi-rust", KeepOpen: true}} {
		drv, _ := DriverFor(sp.Adapter)
		err := keepOpenAllowed(&sp, drv)
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "it can for: pi)") {
			t.Errorf("--keep-open for %s: %v; want an input error naming pi", sp.Adapter, err)
		}
	}
	sp := Spec{Adapter: "pi", Kind: KindResume, KeepOpen: true}
	if err := keepOpenAllowed(&sp, Pi{}); !errors.As(err, &ie) {
		t.Errorf("--keep-open on a resume: %v; want an input error", err)
	}
}

// The first input is get_state, then the prompt as one "prompt" command; the
// get_state response in the log (recorded from pi 1.6.0, trimmed) confirms the
// session, and a stopped kept-open run is a success.
func TestPiKeepOpenFirstInputAndConfirm(t *testing.T) {
	b, err := Pi{}.FirstInput("line one\n\"two\"")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("first input %q: want 2 lines", b)
	}
	var cmds []map[string]string
	for _, l := range lines {
		var m map[string]string
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		cmds = append(cmds, m)
	}
	want := []map[string]string{{"id": piStateID, "type": "get_state"},
		{"id": "agentctl-launch-prompt", "type": "prompt", "message": "line one\n\"two\"", "streamingBehavior": "followUp"}}
	if diff := cmp.Diff(want, cmds); diff != "" {
		t.Errorf("first input (-want +got):\n%s", diff)
	}
	log, err := os.ReadFile(filepath.Join("testdata", "pi-rpc-1.6.0.log"))
	if err != nil {
		t.Fatal(err)
	}
	ll := bytes.Split(log, []byte("\n"))
	id, _, ok := Pi{}.Confirm(ll, "")
	if !ok || id != "01a23581-40aa-7286-998e-87320af56183" {
		t.Errorf("confirm: %q %v; want the get_state response's sessionId", id, ok)
	}
	if _, _, ok := (Pi{}).Confirm(ll[:1], ""); ok {
		t.Error("confirmed without a get_state response")
	}
	if o := (Pi{}).Classify(ll, 143, true); o.Class != "" {
		t.Errorf("a kept-open run stopped by agentctl: %+v; want a success", o)
	}
	if o := (Pi{}).Classify(ll[:1], 1, false); o.Class != "startup-failed" {
		t.Errorf("no get_state response: %+v; want startup-failed", o)
	}
}

// The input FIFO is 0600, open for reading and writing (no EOF once the
// supervisor's writer is gone); finalising removes it; sweep removes the ones
// of finalised, dead or forgotten runs and keeps a live or starting one.
func TestKeptOpenInputLifecycle(t *testing.T) {
	dir := t.TempDir()
	d := &Deps{Store: meta.NewStore(dir)}
	path := d.InputPath("l-000000000001")
	f, err := openInput(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := os.Lstat(path)
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 || st.Mode().Perm() != 0o600 {
		t.Fatalf("input %v %v; want a 0600 FIFO", st, err)
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Errorf("inputs/ is %v, want 0700", di.Mode().Perm())
	}
	if _, err := openInput(path); err == nil {
		t.Error("a second openInput on an existing path succeeded; want it refused")
	}
	// A writer that comes and goes leaves the reader without EOF.
	w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("x\n"))
	w.Close()
	buf := make([]byte, 8)
	if n, err := f.Read(buf); n != 2 || err != nil {
		t.Errorf("read %d %v; want the 2 bytes written", n, err)
	}

	mk := func(id string) string {
		p := d.InputPath(id)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	now := time.Now()
	me := os.Getpid()
	self, err := proc.Lookup(me)
	if err != nil {
		t.Skipf("no process table: %v", err)
	}
	recs := []meta.Launch{
		{ID: "l-00000000000a", Input: mk("l-00000000000a"), LaunchedAt: now},                                       // starting: no pid yet
		{ID: "l-00000000000b", Input: mk("l-00000000000b"), LaunchedAt: now, FinalisedAt: &now},                    // finalised
		{ID: "l-00000000000c", Input: mk("l-00000000000c"), LaunchedAt: now, PID: 1 << 22},                         // dead pid
		{ID: "l-00000000000d", Input: mk("l-00000000000d"), LaunchedAt: now, PID: me, StartTicks: self.StartTicks}, // alive (this test)
	}
	mk("l-00000000000e") // no record: expired
	if err := d.Store.UpdateLaunches(func(l *meta.Launches) (bool, error) { l.Records = recs; return true, nil }); err != nil {
		t.Fatal(err)
	}
	n, err := d.SweepInputs()
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	ents, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range ents {
		left = append(left, e.Name())
	}
	// l-…01 has no record either (expired), though a reader holds it.
	if diff := cmp.Diff([]string{"l-00000000000a", "l-00000000000d"}, left); diff != "" || n != 4 {
		t.Errorf("after sweep (%d removed; -want +got):\n%s", n, diff)
	}
	path = mk("l-00000000000f")
	removeInput(path)
	if _, err := os.Lstat(path); err == nil {
		t.Error("removeInput left the FIFO")
	}
	reg := filepath.Join(dir, "regular")
	os.WriteFile(reg, nil, 0o600)
	removeInput(reg)
	if _, err := os.Lstat(reg); err != nil {
		t.Error("removeInput removed a regular file")
	}
}
