package metrics

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/meta"
)

type sessions []discover.Session

func (s sessions) Len() int                   { return len(s) }
func (s sessions) At(i int) *discover.Session { return &s[i] }

func ptr[T any](v T) *T { return &v }

var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func journal(evs ...meta.Event) func(func(meta.Event, []byte) bool) error {
	return func(fn func(meta.Event, []byte) bool) error {
		for _, ev := range evs {
			if !fn(ev, nil) {
				return nil
			}
		}
		return nil
	}
}

func end(typ, launchID, adapter string, d time.Duration, extra map[string]any) meta.Event {
	sess := map[string]any{"started_at": t0.Format(time.RFC3339), "ended_at": t0.Add(d).Format(time.RFC3339)}
	for k, v := range extra {
		sess[k] = v
	}
	return meta.Event{Type: typ, LaunchID: launchID, Adapter: adapter, Timestamp: t0.Add(d + time.Second), Session: sess}
}

// parse renders the input and parses it back with the exposition parser, so every
// test also proves the output is well-formed text format.
func parse(t *testing.T, in Input) map[string]*dto.MetricFamily {
	t.Helper()
	reg, err := Registry(in)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, reg); err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, buf.String())
	}
	// One HELP and one TYPE per family.
	for name := range mfs {
		for _, kw := range []string{"# HELP ", "# TYPE "} {
			if n := strings.Count(buf.String(), kw+name+" "); n != 1 {
				t.Errorf("%s%s appears %d times", kw, name, n)
			}
		}
	}
	return mfs
}

// values flattens a family to "label=value,…" → value.
func values(mf *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range mf.GetMetric() {
		var ls []string
		for _, l := range m.GetLabel() {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(ls)
		var v float64
		switch {
		case m.Gauge != nil:
			v = m.GetGauge().GetValue()
		case m.Counter != nil:
			v = m.GetCounter().GetValue()
		}
		out[strings.Join(ls, ",")] = v
	}
	return out
}

func TestFamilies(t *testing.T) {
	in := Input{
		SessionAdapters: []string{"claude-code", "codex"},
		Sessions: sessions{
			{ID: "a", Adapter: "claude-code", Status: "running", Tokens: &discover.Tokens{Input: 10, Output: 5, CacheRead: 100, CacheWrite: 7}, CostUSD: ptr(0.5)},
			{ID: "b", Adapter: "claude-code", Status: "stopped", Tokens: &discover.Tokens{Input: 1, Output: 2}, CostUSD: ptr(0.25)},
			{ID: "c", Adapter: "codex", Status: "idle"},
			{ID: "d", Adapter: "pi-rust", Status: "failed", Tokens: &discover.Tokens{Output: 3}},
		},
		Adapters: []string{"claude-code", "codex", "openclaw"},
		Up:       map[string]bool{"claude-code": true, "codex": true},
		Elapsed:  map[string]time.Duration{"claude-code": 250 * time.Millisecond, "codex": time.Second, "openclaw": 5 * time.Second},
		Locks:    map[string]int{"manual": 2},
		Fuses:    3,
		Journal: journal(
			meta.Event{Type: meta.EventLaunched, LaunchID: "l-1", Adapter: "claude-code"},
			end(meta.EventStopped, "l-1", "claude-code", 30*time.Second, map[string]any{"exit_code": 0.0}),
			end(meta.EventFailed, "l-2", "codex", 400*time.Second, map[string]any{"exit_code": 1.0}),
			end(meta.EventStopped, "l-3", "codex", 2*time.Hour+time.Second, map[string]any{"exit_code": 143.0, "stopped_by_agentctl": true}),
			end(meta.EventStopped, "l-4", "pi", 10*time.Minute, map[string]any{"exit_code": nil}),
			// Not a launch: events --follow's view of a session started elsewhere.
			meta.Event{Type: meta.EventStopped, SessionID: "x", Adapter: "codex"},
		),
	}
	mfs := parse(t, in)

	want := map[string]map[string]float64{
		"agentctl_sessions": {},
		"agentctl_session_tokens_total": {
			"adapter=claude-code,class=input": 11, "adapter=claude-code,class=output": 7,
			"adapter=claude-code,class=cache_read": 100, "adapter=claude-code,class=cache_write": 7,
			"adapter=codex,class=input": 0, "adapter=codex,class=output": 0,
			"adapter=codex,class=cache_read": 0, "adapter=codex,class=cache_write": 0,
			"adapter=pi-rust,class=input": 0, "adapter=pi-rust,class=output": 3,
			"adapter=pi-rust,class=cache_read": 0, "adapter=pi-rust,class=cache_write": 0,
		},
		"agentctl_session_cost_usd_total":    {"adapter=claude-code": 0.75, "adapter=codex": 0},
		"agentctl_locks":                     {"type=auto": 0, "type=manual": 2},
		"agentctl_fuses":                     {"": 3},
		"agentctl_adapter_up":                {"adapter=claude-code": 1, "adapter=codex": 1, "adapter=openclaw": 0},
		"agentctl_adapter_discovery_seconds": {"adapter=claude-code": 0.25, "adapter=codex": 1, "adapter=openclaw": 5},
		"agentctl_launches_total": {
			"adapter=claude-code,outcome=completed": 1, "adapter=codex,outcome=failed": 1,
			"adapter=codex,outcome=stopped": 1, "adapter=pi,outcome=unknown": 1,
		},
	}
	for _, a := range []string{"claude-code", "codex"} {
		for _, st := range Statuses {
			want["agentctl_sessions"]["adapter="+a+",status="+st] = 0
		}
	}
	for _, a := range []string{"claude-code", "codex"} {
		for _, o := range Outcomes {
			k := "adapter=" + a + ",outcome=" + o
			if _, ok := want["agentctl_launches_total"][k]; !ok {
				want["agentctl_launches_total"][k] = 0
			}
		}
	}
	want["agentctl_sessions"]["adapter=claude-code,status=running"] = 1
	want["agentctl_sessions"]["adapter=claude-code,status=stopped"] = 1
	want["agentctl_sessions"]["adapter=codex,status=idle"] = 1
	want["agentctl_sessions"]["adapter=pi-rust,status=failed"] = 1

	for name, w := range want {
		mf, ok := mfs[name]
		if !ok {
			t.Errorf("family %s missing", name)
			continue
		}
		if d := cmp.Diff(w, values(mf)); d != "" {
			t.Errorf("%s (-want +got):\n%s", name, d)
		}
	}
	types := map[string]dto.MetricType{}
	for name, mf := range mfs {
		types[name] = mf.GetType()
	}
	wantTypes := map[string]dto.MetricType{
		"agentctl_sessions": dto.MetricType_GAUGE, "agentctl_session_tokens_total": dto.MetricType_COUNTER,
		"agentctl_session_cost_usd_total": dto.MetricType_COUNTER, "agentctl_locks": dto.MetricType_GAUGE,
		"agentctl_fuses": dto.MetricType_GAUGE, "agentctl_adapter_up": dto.MetricType_GAUGE,
		"agentctl_adapter_discovery_seconds": dto.MetricType_GAUGE, "agentctl_launches_total": dto.MetricType_COUNTER,
		"agentctl_session_duration_seconds": dto.MetricType_HISTOGRAM,
	}
	if d := cmp.Diff(wantTypes, types); d != "" {
		t.Errorf("families and types (-want +got):\n%s", d)
	}

	h := mfs["agentctl_session_duration_seconds"].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 4 {
		t.Errorf("duration count %d, want 4", h.GetSampleCount())
	}
	if got, want := h.GetSampleSum(), 30.0+400+7201+600; got != want {
		t.Errorf("duration sum %v, want %v", got, want)
	}
	cum := map[float64]uint64{}
	for _, b := range h.GetBucket() {
		cum[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	if d := cmp.Diff(map[float64]uint64{60: 1, 300: 1, 600: 3, 1800: 3, 3600: 3, 7200: 3, math.Inf(1): 4}, cum); d != "" {
		t.Errorf("buckets (-want +got):\n%s", d)
	}
}

// A launch finalised twice (a retry after a crash) counts once.
func TestEndsDeduplicates(t *testing.T) {
	ends, err := Ends(journal(
		end(meta.EventStopped, "l-1", "codex", time.Minute, map[string]any{"exit_code": nil}),
		end(meta.EventStopped, "l-1", "codex", time.Minute, map[string]any{"exit_code": 0.0}),
	))
	if err != nil {
		t.Fatal(err)
	}
	if len(ends) != 1 || ends[0].Outcome != OutcomeCompleted {
		t.Fatalf("got %+v, want one completed end", ends)
	}
}

// No input at all is still a valid exposition with every family present.
func TestEmpty(t *testing.T) {
	mfs := parse(t, Input{})
	for _, name := range []string{"agentctl_locks", "agentctl_fuses", "agentctl_session_duration_seconds"} {
		if _, ok := mfs[name]; !ok {
			t.Errorf("family %s missing from an empty exposition", name)
		}
	}
}

func TestWriteTextfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agentctl.prom")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := Registry(Input{Fuses: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteTextfile(path, reg); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "agentctl_fuses 1\n") {
		t.Errorf("textfile:\n%s", b)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		t.Errorf("temp files left behind: %v", ents)
	}
}
