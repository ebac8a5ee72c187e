package discover

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/meta"
)

// packFixture is n sessions with every field the encoding knows set in some of
// them, values repeating as in a real listing (directories, models) or not (ids,
// prompts), and times in UTC and in time.Local.
func packFixture(n int) []Session {
	r := rand.New(rand.NewSource(11))
	base := time.Date(2026, 11, 20, 21, 52, 37, 169_000_000, time.UTC)
	pick := func(vs ...string) string { return vs[r.Intn(len(vs))] }
	ss := make([]Session, n)
	for i := range ss {
		id := fmt.Sprintf("%08x-4708-8fc9-aeb3-%012x", r.Uint32(), r.Int63()&0xffffffffffff)
		s := Session{ID: id, Adapter: pick("claude-code", "codex", "opencode", "pi", "pi-rust"),
			Status: pick(StatusRunning, StatusIdle, StatusStopped, StatusFailed, StatusWaiting), Evidence: pick(EvidenceTranscript, EvidenceLaunchRecord),
			EvidenceDetail: pick("", "done", "last turn interrupted (rollout); no thread-writer lock held"),
			Cwd:            pick("", "/home/dev/billing", "/home/dev/project-33"), Model: pick("", "gpt-6.1-codex", "claude-opus-4-8"),
			Prompt: pick("", "fix the build", fmt.Sprintf("check prompt %d", i)), GitBranch: pick("", "main"),
			Path: pick("", "rel-name.jsonl", "/") + pick("", fmt.Sprintf("/home/dev/.pi/agent/sessions/--p%d--/%s.jsonl", r.Intn(5), id)),
		}
		s.Title = pick(s.Prompt, "", "a title of its own")
		switch r.Intn(4) {
		case 0:
			s.BlockedReason, s.LastCwd, s.ExitReason, s.CostSource = "quota", "/home/dev/billing/sub", "budget:cost", "agent"
			s.AgentVersion, s.Entrypoint, s.PermissionMode, s.Group, s.Spec = "2.1.197", "sdk-cli", "default", "g-1", "claude:opus"
			s.LaunchID, s.Log, s.Host, s.Kind, s.JobID = "l-"+id[:8], "/tmp/log", "build-box", "background", id[:6]
			s.Inferred, s.PID = true, r.Intn(1<<22)
			s.Meta = map[string]string{"ticket": "T-1", "owner": pick("a", "b")}
		case 1:
			s.Models = []string{pick("m1", "m2"), "m3"}
		case 2:
			s.Models = []string{}
			s.Extra = map[string]any{}
			s.Meta = map[string]string{}
		}
		at := func() *time.Time {
			t := base.Add(time.Duration(r.Int63n(int64(30 * 24 * time.Hour))))
			if r.Intn(5) == 0 {
				t = t.Local()
			}
			return &t
		}
		if r.Intn(6) > 0 {
			s.StartedAt = at()
		}
		if r.Intn(6) > 0 {
			s.LastActivity = at()
		}
		switch r.Intn(3) {
		case 0:
			s.EndedAt = s.LastActivity
		case 1:
			s.EndedAt = at()
		}
		if r.Intn(3) == 0 {
			c := r.Intn(300) - 150
			s.ExitCode = &c
		}
		if r.Intn(3) > 0 {
			s.Tokens = &Tokens{Input: r.Int63n(1e6), Output: r.Int63n(1e5), CacheRead: r.Int63(), CacheWrite: -1}
		}
		if r.Intn(2) == 0 {
			c := r.Float64() * 10
			s.CostUSD = &c
		}
		if r.Intn(2) == 0 {
			s.Extra = map[string]any{"provider": "openai", "reason": pick("done", "interrupted"), "archived": r.Intn(2) == 0,
				"tokens_total": r.Int63n(1e9) - 5e8, "n": r.Intn(1000), "cost_inherited_usd": math.Inf(1),
				"tokens_subagents": Tokens{Input: 1, Output: 2, CacheRead: 3, CacheWrite: r.Int63()}, "slug": fmt.Sprint("s-", i)}
		}
		ss[i] = s
	}
	return ss
}

// TestPackedRoundTrip: every session decodes to what was packed, field for
// field (times with their zone, EndedAt still LastActivity where it was), and
// prints the same JSON; the ones the encoding cannot hold are kept whole.
func TestPackedRoundTrip(t *testing.T) {
	ss := packFixture(3000)
	odd := func(s Session) Session { return s }
	zoned := time.Date(2026, 11, 28, 10, 0, 0, 5, time.FixedZone("CET", 3600))
	budget := odd(ss[0])
	budget.Budget = &meta.Budget{MaxCostUSD: 2}
	slots := odd(ss[1])
	slots.Slots = Slots{{At: 3600, Tokens: Tokens{Input: 1}}}
	zone := odd(ss[2])
	zone.StartedAt = &zoned
	extra := odd(ss[3])
	extra.Extra = map[string]any{"odd": []string{"x"}}
	ss = append(ss, budget, slots, zone, extra)
	want := make([]Session, len(ss))
	copy(want, ss)

	p := packSessions(ss)
	if got := len(p.spill); got != 4 {
		t.Errorf("%d sessions spilled, want the 4 the encoding cannot hold", got)
	}
	scratch := new(unpacked)
	for i := range want {
		got := p.session(i)
		if diff := cmp.Diff(want[i], *got); diff != "" {
			t.Fatalf("session %d (-packed +decoded):\n%s", i, diff)
		}
		if v := p.sessionInto(i, scratch); !cmp.Equal(want[i], *v) {
			t.Fatalf("session %d decoded into a used scratch differs: %s", i, cmp.Diff(want[i], *v))
		}
		if p.id(i) != want[i].ID {
			t.Fatalf("id(%d) = %q, want %q", i, p.id(i), want[i].ID)
		}
		for j, pair := range [][2]*time.Time{{want[i].StartedAt, got.StartedAt}, {want[i].LastActivity, got.LastActivity}, {want[i].EndedAt, got.EndedAt}} {
			if pair[0] != nil && pair[0].Location() != pair[1].Location() {
				t.Fatalf("session %d time %d: zone %v, want %v", i, j, pair[1].Location(), pair[0].Location())
			}
		}
		if (want[i].EndedAt != nil && want[i].EndedAt == want[i].LastActivity) != (got.EndedAt != nil && got.EndedAt == got.LastActivity) {
			t.Fatalf("session %d: EndedAt is LastActivity: %v, want %v", i, got.EndedAt == got.LastActivity, want[i].EndedAt == want[i].LastActivity)
		}
		if k := keyOf(&want[i]); p.keys[i] != k {
			t.Fatalf("session %d sort key %+v, want %+v", i, p.keys[i], k)
		}
		wj, werr := json.Marshal(want[i])
		gj, gerr := json.Marshal(got)
		if string(wj) != string(gj) || (werr == nil) != (gerr == nil) {
			t.Fatalf("session %d prints\n%s (%v)\nwant\n%s (%v)", i, gj, gerr, wj, werr)
		}
	}
	// A decoded session is the caller's: changing it changes nothing packed.
	s := p.session(5)
	s.ID, s.Status = "changed", "changed"
	if p.session(5).ID != want[5].ID || p.id(5) != want[5].ID {
		t.Fatal("changing a decoded session changed the packed one")
	}
}

// TestPackedIsSmaller: packed, a listing's sessions take a fraction of what
// they take as Sessions, which is the point of packing them.
func TestPackedIsSmaller(t *testing.T) {
	ss := packFixture(2000)
	p := packSessions(ss)
	size := len(p.arena) + 4*len(p.off) + 16*len(p.keys) + 32*len(p.shared)
	t.Logf("%d bytes a session", size/len(ss))
	if per, max := size/len(ss), 300; per > max {
		t.Fatalf("packed: %d bytes a session, want at most %d", per, max)
	}
}

func BenchmarkPackSessions(b *testing.B) {
	ss := packFixture(10000)
	b.ReportAllocs()
	for b.Loop() {
		packSessions(ss)
	}
}

func BenchmarkPackedView(b *testing.B) {
	p := packSessions(packFixture(10000))
	u := new(unpacked)
	b.ReportAllocs()
	for b.Loop() {
		for i := range p.Len() {
			p.sessionInto(i, u)
		}
	}
}

// FuzzPackRoundTrip: any strings, numbers and times decode to what was packed,
// alone and next to sessions sharing its values.
func FuzzPackRoundTrip(f *testing.F) {
	f.Add("id-1", "/home/dev/p", "fix it", "a title", "/a/b/c.jsonl", "openai", int64(42), int64(1795211000), int64(5), 1.5, true)
	f.Add("", "", "", "", "/", "", int64(-1), int64(-62135596800), int64(0), math.NaN(), false)
	f.Add("\xff\x00", "é\"\\", "\n", "\n", "name-only", "\u2028", int64(math.MinInt64), int64(math.MaxInt32), int64(999999999), math.Inf(-1), true)
	f.Fuzz(func(t *testing.T, id, cwd, prompt, title, path, xs string, n, sec, nsec int64, cost float64, local bool) {
		if nsec < 0 || nsec > 999_999_999 {
			nsec = 0
		}
		at := time.Unix(sec, nsec).UTC()
		if local {
			at = at.Local()
		}
		end := at.Add(time.Second)
		code := int(n)
		s := Session{ID: id, Adapter: xs, Status: title, Evidence: cwd, Cwd: cwd, LastCwd: prompt, Model: xs, Models: []string{xs, cwd},
			Title: title, Prompt: prompt, Path: path, PID: int(n), Inferred: local, StartedAt: &at, LastActivity: &at, EndedAt: &end,
			ExitCode: &code, Tokens: &Tokens{Input: n, Output: -n, CacheRead: sec, CacheWrite: nsec}, CostUSD: &cost,
			Extra: map[string]any{xs: n, cwd + "x": xs, "f": cost, "b": local, "i": int(n), "t": Tokens{Input: n}},
			Meta:  map[string]string{xs: cwd, prompt: title}}
		other := s
		other.ID, other.EndedAt = id+"-2", other.LastActivity
		ss := []Session{s, other, s}
		want := []Session{s, other, s}
		p := packSessions(ss)
		for i := range want {
			got := p.session(i)
			if diff := cmp.Diff(want[i], *got, cmp.Comparer(func(a, b float64) bool {
				return math.Float64bits(a) == math.Float64bits(b)
			})); diff != "" {
				t.Fatalf("session %d (-packed +decoded):\n%s", i, diff)
			}
			wj, werr := json.Marshal(want[i])
			gj, gerr := json.Marshal(got)
			if string(wj) != string(gj) || (werr == nil) != (gerr == nil) {
				t.Fatalf("session %d prints\n%s (%v)\nwant\n%s (%v)", i, gj, gerr, wj, werr)
			}
		}
	})
}

// TestPackedEveryField: a session with every field the encoding holds set (by
// reflection, so a field added to Session is in it before anyone remembers to
// teach packed.go) decodes to itself, unspilled.
func TestPackedEveryField(t *testing.T) {
	var s Session
	fillEvery(t, reflect.ValueOf(&s).Elem(), "Session")
	s.Budget, s.Slots = nil, nil // never packed: such a session is kept whole
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		if f := v.Type().Field(i); v.Field(i).IsZero() && f.Name != "Budget" && f.Name != "Slots" {
			t.Fatalf("premise: Session.%s not filled", f.Name)
		}
	}
	p := packSessions([]Session{s, s})
	if len(p.spill) != 0 {
		t.Fatalf("%d of 2 sessions spilled", len(p.spill))
	}
	for i := range 2 {
		if diff := cmp.Diff(s, *p.session(i)); diff != "" {
			t.Fatalf("session %d (-packed +decoded):\n%s", i, diff)
		}
	}
}

// fillEvery sets every exported field reachable from v to a non-zero value.
func fillEvery(t *testing.T, v reflect.Value, name string) {
	t.Helper()
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(time.Date(2026, 11, 20, 21, 55, 1, 500, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("v-" + name)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.125)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillEvery(t, v.Elem(), name)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillEvery(t, v.Index(0), name)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k := reflect.New(v.Type().Key()).Elem()
		fillEvery(t, k, name+"-key")
		e := reflect.New(v.Type().Elem()).Elem()
		fillEvery(t, e, name)
		v.SetMapIndex(k, e)
	case reflect.Interface:
		v.Set(reflect.ValueOf("any-" + name))
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fillEvery(t, v.Field(i), name+"."+f.Name)
			}
		}
	default:
		t.Fatalf("%s: fillEvery does not know kind %s; teach it", name, v.Kind())
	}
}
