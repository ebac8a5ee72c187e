package gemini

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
)

// TestCachedCodecRoundTrip: every field of cached survives the parse index's
// binary encoding; a field added to cached but not to the codec fails here
// (the test value must fill it).
func TestCachedCodecRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 123, time.FixedZone("x", 3600))
	c := cached{ID: "id", ProjectHash: "h", Kind: "main", Start: at, Last: at.Add(time.Hour), Model: "m", Models: []string{"m", "n"},
		FirstPrompt: "p", RolledBack: true, Failed: failedTurn{Prompt: "fp", At: at, Until: at.Add(time.Second), ProjectDir: "/d"},
		BadUsage: 1, Bad: 2, Lines: 3, Usage: map[string]usage{"g1": {Tokens: discover.Tokens{Input: 1, Output: 2, CacheRead: 3, CacheWrite: 4}, TS: at}},
		UsageOrder: []string{"g1"}, Prompts: []string{"u1", "u2"}, Outcome: discover.OutcomeError, Detail: "d", Asked: at.Add(time.Minute)}
	var zero func(v reflect.Value, path string)
	zero = func(v reflect.Value, path string) {
		if v.Kind() == reflect.Struct && v.Type() != reflect.TypeFor[time.Time]() {
			for i := range v.NumField() {
				zero(v.Field(i), path+"."+v.Type().Field(i).Name)
			}
			return
		}
		if v.IsZero() {
			t.Errorf("field %s is zero in the test value: fill it, and encode it in cache.go", path)
		}
	}
	zero(reflect.ValueOf(c), "cached")
	b, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got cached
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(c, got, cmp.AllowUnexported(cached{}, failedTurn{}, usage{})); d != "" {
		t.Errorf("(-encoded +decoded):\n%s", d)
	}
	if err := got.UnmarshalBinary(b[:len(b)-1]); err == nil {
		t.Error("a truncated payload decoded")
	}
	var empty cached
	b, _ = empty.MarshalBinary()
	if err := got.UnmarshalBinary(b); err != nil || !cmp.Equal(empty, got, cmp.AllowUnexported(cached{}, failedTurn{}, usage{})) {
		t.Errorf("zero value: %v %+v", err, got)
	}
}
