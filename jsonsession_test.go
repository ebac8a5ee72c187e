package main

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
)

// plainSession has Session's fields and tags but not its type, so
// writeJSONArray encodes it the generic way (encoding/json).
type plainSession discover.Session

func stdlibJSON(t testing.TB, ss []discover.Session) (string, error) {
	t.Helper()
	ps := make([]plainSession, len(ss))
	for i := range ss {
		ps[i] = plainSession(ss[i])
	}
	var b bytes.Buffer
	err := writeJSONArray(&b, ps)
	return b.String(), err
}

func fastJSON(t testing.TB, ss []discover.Session) (string, error) {
	t.Helper()
	var b bytes.Buffer
	err := writeJSONArray(&b, ss)
	return b.String(), err
}

// randSession fills fields at random, with the strings, times and numbers whose
// JSON encoding has corner cases.
func randSession(r *rand.Rand) discover.Session {
	strs := []string{"", "plain", "with \"quotes\" and \\backslash\\", "tab\tnl\nCR\r bs\b ff\f nul\x00 esc\x1b del\x7f",
		"<html> & 'amp'", "é ü 日本語 🎉", "bad utf8 \xff\xfe end", "trunc \xe6\x97", "ls\u2028ps\u2029", strings.Repeat("long prompt ", 200),
		"/home/dev/project-1/sub dir", "\u00a0nbsp", "\ufffd already"}
	str := func() string {
		if r.IntN(3) == 0 {
			return ""
		}
		return strs[r.IntN(len(strs))]
	}
	locs := []*time.Location{time.UTC, time.FixedZone("X", 5*3600+30*60), time.FixedZone("Y", -8*3600), time.FixedZone("Z", 0), time.Local}
	tm := func() *time.Time {
		if r.IntN(4) == 0 {
			return nil
		}
		t := time.Date(1990+r.IntN(60), time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), 0, locs[r.IntN(len(locs))])
		switch r.IntN(4) {
		case 1:
			t = t.Add(time.Duration(r.IntN(1000)) * time.Millisecond)
		case 2:
			t = t.Add(time.Duration(r.IntN(1e9)))
		case 3:
			t = t.Add(time.Duration(r.IntN(1000)) * time.Microsecond)
		}
		return &t
	}
	floats := []float64{0, 1, 0.1, 1.0 / 3, 12.5, 1e-7, 1e-6, 123456789.123, 1e20, 1e21, 1e22, math.Copysign(0, -1), 3.25, 5e-324, math.MaxFloat64}
	s := discover.Session{
		ID: str(), Adapter: str(), Status: str(), Evidence: str(), EvidenceDetail: str(),
		Inferred: r.IntN(2) == 0, Cwd: str(), LastCwd: str(), Model: str(), Title: str(), Prompt: str(),
		StartedAt: tm(), LastActivity: tm(), EndedAt: tm(),
		CostSource: str(), GitBranch: str(), AgentVersion: str(), Entrypoint: str(), PermissionMode: str(),
		Group: str(), Spec: str(), LaunchID: str(), Log: str(), Host: str(), Path: str(),
	}
	if r.IntN(2) == 0 {
		s.PID = r.IntN(1<<22) - 100
	}
	switch r.IntN(3) {
	case 0:
		s.Models = []string{} // empty, not nil: still omitted
	case 1:
		for n := r.IntN(3) + 1; n > 0; n-- {
			s.Models = append(s.Models, strs[r.IntN(len(strs))])
		}
	}
	if r.IntN(2) == 0 {
		c := r.IntN(300) - 150
		s.ExitCode = &c
	}
	if r.IntN(2) == 0 {
		s.Tokens = &discover.Tokens{Input: r.Int64N(1e12), Output: r.Int64N(1e6), CacheRead: r.Int64N(10), CacheWrite: 0}
	}
	if r.IntN(2) == 0 {
		f := floats[r.IntN(len(floats))] * float64(1+r.IntN(3))
		s.CostUSD = &f
	}
	switch r.IntN(3) {
	case 0:
		s.Meta = map[string]string{}
	case 1:
		s.Meta = map[string]string{}
		for n := r.IntN(4) + 1; n > 0; n-- {
			s.Meta[strs[r.IntN(len(strs))]] = str()
		}
	}
	switch r.IntN(3) {
	case 0:
		s.Extra = map[string]any{}
	case 1:
		s.Extra = map[string]any{}
		vals := []any{"s", strs[r.IntN(len(strs))], true, false, 42, int64(-7), 0.5, 1e-9, nil,
			map[string]int64{"input": 3, "output": 4}, []string{"a", "b"}, []string{}, map[string]any{},
			map[string]any{"nested": []any{1, "x", map[string]any{"deep": true}}}, uint8(3), float32(0.1), time.Unix(0, 5).UTC()}
		for n := r.IntN(8) + 1; n > 0; n-- {
			s.Extra[strs[r.IntN(len(strs))]+"_k"] = vals[r.IntN(len(vals))]
		}
	}
	return s
}

// TestSessionJSONMatchesStdlib: the reflection-free session encoding prints
// exactly what encoding/json prints, field for field and byte for byte.
func TestSessionJSONMatchesStdlib(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var ss []discover.Session
	for i := 0; i < 3000; i++ {
		ss = append(ss, randSession(r))
	}
	ss = append(ss, discover.Session{}) // every field empty
	refused := 0
	for i := range ss {
		want, werr := stdlibJSON(t, ss[i:i+1])
		if _, ok := appendSessionJSON(nil, &ss[i]); ok != (werr == nil) {
			t.Fatalf("session %d: fast path ok %v, encoding/json error %v", i, ok, werr)
		}
		if werr != nil {
			refused++
		}
		if werr != nil { // the listing prints it without the refused values
			c := ss[i]
			scrubSession(&c)
			want, werr = stdlibJSON(t, []discover.Session{c})
		}
		got, gerr := fastJSON(t, ss[i:i+1])
		if werr != nil || gerr != nil || want != got {
			t.Fatalf("session %d: encoding/json (err %v):\n%s\nfast (err %v):\n%s", i, werr, want, gerr, got)
		}
	}
	if refused > len(ss)/20 {
		t.Fatalf("%d of %d sessions not encodable: the test covers too little", refused, len(ss))
	}
	ok := ss[:0]
	for _, s := range ss {
		if s.CostUSD == nil || !math.IsInf(*s.CostUSD, 0) {
			ok = append(ok, s)
		}
	}
	want, _ := stdlibJSON(t, ok)
	got, _ := fastJSON(t, ok)
	if want != got {
		t.Fatal("the whole array differs")
	}
}

// fillAll sets every field reachable from v to a non-zero value, by reflection, so
// a field added to Session (or to a struct it holds) is in the comparison before
// anyone remembers to add it to the fast encoder.
func fillAll(t *testing.T, v reflect.Value, name string) {
	t.Helper()
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(time.Date(2026, 11, 20, 21, 55, 1, 500, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("v-" + name + " \"q\" é")
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
		fillAll(t, v.Elem(), name)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillAll(t, v.Index(0), name)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k := reflect.New(v.Type().Key()).Elem()
		fillAll(t, k, name+"-key")
		e := reflect.New(v.Type().Elem()).Elem()
		fillAll(t, e, name)
		v.SetMapIndex(k, e)
	case reflect.Interface:
		v.Set(reflect.ValueOf("any-" + name))
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() {
				fillAll(t, v.Field(i), name+"."+f.Name)
			}
		}
	default:
		t.Fatalf("%s: fillAll does not know kind %s; teach it", name, v.Kind())
	}
}

// TestSessionJSONEveryField: a session with every field set encodes exactly as
// encoding/json encodes it, so a field the fast encoder forgets fails here.
func TestSessionJSONEveryField(t *testing.T) {
	var s discover.Session
	fillAll(t, reflect.ValueOf(&s).Elem(), "Session")
	v := reflect.ValueOf(s)
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).IsZero() {
			t.Fatalf("premise: Session.%s not filled", v.Type().Field(i).Name)
		}
	}
	if _, ok := appendSessionJSON(nil, &s); !ok {
		t.Fatal("the fast path refused a fully filled session")
	}
	want, werr := stdlibJSON(t, []discover.Session{s})
	got, gerr := fastJSON(t, []discover.Session{s})
	if werr != nil || gerr != nil || want != got {
		t.Fatalf("encoding/json (err %v):\n%s\nfast (err %v):\n%s", werr, want, gerr, got)
	}
	// Every tagged field shows up: nothing filled was omitted by both encoders.
	for i := 0; i < v.NumField(); i++ {
		tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if tag != "-" && !strings.Contains(got, `"`+tag+`":`) {
			t.Errorf("field %s (%q) missing from %s", v.Type().Field(i).Name, tag, got)
		}
	}
}

// TestSessionJSONErrorsLikeStdlib: values encoding/json refuses are refused by
// the fast path too, and the listing prints the session without them exactly
// as encoding/json prints the scrubbed session (never an error).
func TestSessionJSONErrorsLikeStdlib(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	y10k := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	neg := time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)
	odd := time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("odd", 24*3600))
	for _, s := range []discover.Session{
		{ID: "nan", CostUSD: &nan},
		{ID: "inf", CostUSD: &inf},
		{ID: "y10k", StartedAt: &y10k},
		{ID: "neg", EndedAt: &neg},
		{ID: "zone", LastActivity: &odd},
		{ID: "extra", Extra: map[string]any{"f": nan}},
		{ID: "chan", Extra: map[string]any{"c": make(chan int)}},
	} {
		if _, werr := stdlibJSON(t, []discover.Session{s}); werr == nil {
			t.Errorf("%s: encoding/json accepts it; the case tests nothing", s.ID)
		}
		if _, ok := appendSessionJSON(nil, &s); ok {
			t.Errorf("%s: fast path accepted a session encoding/json refuses", s.ID)
		}
		c := s
		if len(scrubSession(&c)) == 0 {
			t.Errorf("%s: scrubSession dropped nothing", s.ID)
		}
		want, werr := stdlibJSON(t, []discover.Session{c})
		got, gerr := fastJSON(t, []discover.Session{s})
		if werr != nil || gerr != nil || want != got {
			t.Errorf("%s: encoding/json %q (err %v), fast %q (err %v)", s.ID, want, werr, got, gerr)
		}
	}
}

func benchSessions(n int) []discover.Session {
	r := rand.New(rand.NewPCG(3, 4))
	base := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	ss := make([]discover.Session, n)
	for i := range ss {
		start, last := base.Add(time.Duration(i)*time.Minute), base.Add(time.Duration(i)*time.Minute+time.Duration(r.IntN(1e6))*time.Millisecond)
		cost := float64(r.IntN(10000)) / 1000
		ss[i] = discover.Session{
			ID: "01a1fb2c-d44f-7af1-b2ec-abc4f542e6ac", Adapter: "codex", Status: "stopped", Evidence: "transcript",
			EvidenceDetail: "last turn interrupted (rollout); no thread-writer lock held", Cwd: "/home/bench/project-24",
			Model: "gpt-6.1-codex", Title: "Layer cache remove refactor parse rollout add", Prompt: "Layer cache remove refactor parse rollout add",
			StartedAt: &start, LastActivity: &last, EndedAt: &last,
			Tokens:  &discover.Tokens{Input: 28952, Output: 2105, CacheRead: 14500},
			CostUSD: &cost, CostSource: "estimate", GitBranch: "main", AgentVersion: "0.169.0", Entrypoint: "codex_exec",
			Path:  "/home/bench/.codex/sessions/2026/11/20/rollout-2026-11-20T22-56-21-01a1fb2c-d44f-7af1-b2ec-abc4f542e6ac.jsonl",
			Extra: map[string]any{"last_turn": "interrupted", "provider": "openai", "source": "exec", "tokens_total": int64(45557)},
		}
	}
	return ss
}

// BenchmarkListJSON: `list --json` output of 10,000 sessions, the fast path
// against encoding/json.
func BenchmarkListJSON(b *testing.B) {
	ss := benchSessions(10000)
	ps := make([]plainSession, len(ss))
	for i := range ss {
		ps[i] = plainSession(ss[i])
	}
	b.Run("sessions", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := writeJSONArray(discardWriter{}, ss); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := writeJSONArray(discardWriter{}, ps); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
