package copilot

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
)

// TestSummaryCodecRoundTrip: every field of summary the index keeps survives
// its binary encoding; a field added to summary but not to the codec fails
// here (the test value must fill it). seen, the parse's own state, is not kept.
func TestSummaryCodecRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 123, time.FixedZone("x", 3600))
	tok := discover.Tokens{Input: 1, Output: 2, CacheRead: 3, CacheWrite: 4}
	s := summary{ID: "id", Cwd: "/w", LastCwd: "/v", Branch: "main", Version: "1.0.102", SelectedModel: "m", Models: []string{"m", "n"},
		Prompt: "p", Prompts: 2, Started: at, Last: at.Add(time.Hour), Tokens: tok, Sub: tok, Slots: discover.Slots{{At: 900, Tokens: tok}},
		Usage: 3, BadUsage: 1, ShutdownTokens: tok, HaveShutdown: true, Err: evError{ErrorType: "rate_limit", Message: "429", StatusCode: 429},
		Crash: "boom", Pending: map[string]int{"r1": 7}, Seq: 9, LastUser: 1, LastAssistant: 2, LastError: 3, LastTurnStart: 4, LastTurnEnd: 5,
		LastProcStart: 6, LastShutdown: 7, LastAbort: 8, LastCrash: 9, AssistantTools: true, Bad: 1}
	var zero func(v reflect.Value, path string)
	zero = func(v reflect.Value, path string) {
		if v.Kind() == reflect.Struct && v.Type() != reflect.TypeFor[time.Time]() {
			for i := range v.NumField() {
				if f := v.Type().Field(i); f.IsExported() {
					zero(v.Field(i), path+"."+f.Name)
				}
			}
			return
		}
		if v.IsZero() {
			t.Errorf("field %s is zero in the test value: fill it, and encode it in codec.go", path)
		}
	}
	zero(reflect.ValueOf(s), "summary")
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got summary
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(s, got, cmp.AllowUnexported(summary{})); d != "" {
		t.Errorf("(-encoded +decoded):\n%s", d)
	}
	if err := got.UnmarshalBinary(b[:len(b)-1]); err == nil {
		t.Error("a truncated payload decoded")
	}
	var empty summary
	b, _ = empty.MarshalBinary()
	if err := got.UnmarshalBinary(b); err != nil || !cmp.Equal(empty, got, cmp.AllowUnexported(summary{})) {
		t.Errorf("zero value: %v %+v", err, got)
	}
}
