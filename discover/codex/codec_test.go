package codex

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
)

// fillSummary sets every field of v (recursively) to a distinct non-zero value;
// times get distinct instants and zone offsets.
func fillSummary(t *testing.T, v reflect.Value, n *int) {
	*n++
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		zone := time.FixedZone("", (*n%24-12)*3600+30*60)
		v.Set(reflect.ValueOf(time.Date(2026, 11, 20, 10, *n, 0, *n*1001, zone)))
		return
	case v.Kind() == reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillSummary(t, p.Elem(), n)
		v.Set(p)
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + strconv.Itoa(*n) + " é\n\"")
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fillSummary(t, v.Field(i), n)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := 0; i < 2; i++ {
			fillSummary(t, v.Index(i), n)
		}
		if s, ok := v.Interface().(discover.Slots); ok {
			for i := range s {
				s[i].At = int64(1+5*i+*n) * discover.SlotSeconds // slot starts, ascending
			}
		}
	default:
		t.Fatalf("fillSummary: unhandled kind %s (a new summary field needs encoding)", v.Kind())
	}
}

// TestSummaryCodecRoundTrip: every field survives the parse index, times with
// their zone offsets.
func TestSummaryCodecRoundTrip(t *testing.T) {
	var full summary
	n := 0
	fillSummary(t, reflect.ValueOf(&full).Elem(), &n)
	full.Tail.Turn = turnInterrupted
	utc := summary{Tail: tailInfo{LastTS: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Turn: turnDone}}
	for name, s := range map[string]summary{"full": full, "empty": {}, "utc, no head": utc, "empty head": {Head: &headInfo{}}, "head only meta": {Head: &headInfo{Meta: true}}} {
		b, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got summary
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Equal instants are not enough: the JSON prints the offset.
		if diff := cmp.Diff(s, got, cmp.Comparer(func(a, b time.Time) bool {
			return a.Equal(b) && a.Format(time.RFC3339Nano) == b.Format(time.RFC3339Nano) && a.IsZero() == b.IsZero()
		})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
		for cut := 0; cut < len(b); cut++ {
			var bad summary
			if bad.UnmarshalBinary(b[:cut]) == nil {
				t.Errorf("%s: truncated to %d bytes decodes", name, cut)
			}
		}
	}
}

// BenchmarkIndexLoad: loading the Codex parse index of 10,000 rollouts and
// reading every entry, as a warm listing does.
func BenchmarkIndexLoad(b *testing.B) {
	dir := b.TempDir()
	ix := index.Load[*summary](dir, Name, indexVersion)
	ts := time.Date(2026, 11, 20, 22, 56, 21, 583e6, time.UTC)
	for i := 0; i < 10000; i++ {
		s := &summary{CtxTail: true, Tail: tailInfo{LastTS: ts, Turn: turnDone, TurnKnown: true, TurnStarted: ts, TurnEnded: ts,
			Tokens: &usage{Input: 28952, Cached: 14500, Output: 2105, Total: 45557}, Cwd: "/home/bench/project-24", Model: "gpt-6.1-codex", Approval: "never"}}
		ix.Put("/home/bench/.codex/sessions/2026/11/20/rollout-2026-11-20T22-56-21-"+strconv.Itoa(100000+i)+".jsonl",
			index.Entry[*summary]{Stamp: index.Stamp{Dev: 1, Ino: uint64(i), Size: 5000, MtimeNs: 1}, Offset: 5000, Payload: s})
	}
	if err := ix.Save(); err != nil {
		b.Fatal(err)
	}
	paths := ix.Paths()
	b.ReportAllocs()
	for b.Loop() {
		ix := index.Load[*summary](dir, Name, indexVersion)
		for _, p := range paths {
			if e, ok := ix.Get(p); !ok || e.Payload.Tail.Turn != turnDone {
				b.Fatal("entry lost")
			}
		}
	}
}

func TestIDFromStem(t *testing.T) {
	for stem, want := range map[string]string{
		"rollout-2026-11-20T21-50-23-01a1faf0-70be-7df3-9aa2-02c8425dc9ef": "01a1faf0-70be-7df3-9aa2-02c8425dc9ef",
		"rollout-2026-11-20T21-50-23-01A1FAF0-70BE-7DF3-9AA2-02C8425DC9EF": "01a1faf0-70be-7df3-9aa2-02c8425dc9ef",
		"rollout-2026-11-20T21-50-23-01a1faf0-70be-7df3-9aa2-02c8425dc9eg": "",
		"rollout-2026-11-20T21-50-23-01a1faf0-70be-7df3-9aa2x02c8425dc9ef": "",
		"rollout-renamed-by-hand":             "",
		"01a1faf0-70be-7df3-9aa2-02c8425dc9e": "",
	} {
		if got := idFromStem(stem); got != want {
			t.Errorf("idFromStem(%q) = %q, want %q", stem, got, want)
		}
	}
}
