package qwen

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
)

// TestIndexedCodecRoundTrip: every field of the parse index's payload
// survives its binary encoding; a field added to summary but not to the codec
// fails here (the test value must fill it).
func TestIndexedCodecRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 123, time.FixedZone("x", 3600))
	tok := discover.Tokens{Input: 1, Output: 2, CacheRead: 3, CacheWrite: 4}
	x := indexed{Off: 77, Sum: summary{ID: "id", Cwd: "/w", GitBranch: "main", Version: "0.24.4", Model: "m", Models: []string{"m", "n"},
		Prompt: "p", Prompts: 2, Started: at, Activity: at.Add(time.Hour), Main: tok, Sub: tok, Inherited: tok, Responses: 3, BadUsage: 1,
		Slots: discover.Slots{{At: 900, Tokens: tok}}, Seen: map[uint64]bool{1: true, 1 << 63: true}, Last: lastReply, LastTS: at,
		ErrAfter: "429", ErrStatus: 429, PendingTool: "run_shell_command"}}
	var zero func(v reflect.Value, path string)
	zero = func(v reflect.Value, path string) {
		if v.Kind() == reflect.Struct && v.Type() != reflect.TypeFor[time.Time]() {
			for i := range v.NumField() {
				zero(v.Field(i), path+"."+v.Type().Field(i).Name)
			}
			return
		}
		if v.IsZero() {
			t.Errorf("field %s is zero in the test value: fill it, and encode it in codec.go", path)
		}
	}
	zero(reflect.ValueOf(x), "indexed")
	b, err := x.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got indexed
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(x, got); d != "" {
		t.Errorf("(-encoded +decoded):\n%s", d)
	}
	if err := got.UnmarshalBinary(b[:len(b)-1]); err == nil {
		t.Error("a truncated payload decoded")
	}
	var empty indexed
	b, _ = empty.MarshalBinary()
	if err := got.UnmarshalBinary(b); err != nil || !cmp.Equal(empty, got) {
		t.Errorf("zero value: %v %+v", err, got)
	}
}
