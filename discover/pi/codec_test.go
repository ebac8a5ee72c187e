package pi

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
)

// TestSummaryCodecRoundTrip: every field survives the index's encoding; a field
// left zero here (one added to summary but not to the codec) fails.
func TestSummaryCodecRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 5, 10, 0, 0, 123, time.FixedZone("x", 3600))
	s := summary{Off: 77, HeaderOK: true,
		Header: header{Type: "session", Version: 3, ID: "id", Timestamp: "ts", Cwd: "/w", ParentSession: "p", BranchedFrom: "b",
			Provider: "prov", ModelID: "m", ThinkingLevel: "high"},
		Model: "prov/m", Models: []string{"prov/m", "x/y"}, Title: "t", Prompt: "pr", PromptSeen: true,
		Tokens: discover.Tokens{Input: 1, Output: 2, CacheRead: 3, CacheWrite: 4}, Cost: 0.25, Users: 5, Assistants: 6,
		ToolResults: 7, LastMsgAt: at, LastEntryAt: at.Add(time.Second), Leaf: leaf{Role: "assistant", StopReason: "stop", ErrorMessage: "e", At: at},
		Bad: 8, BadUsage: 9, ErrStreak: 2, TooLong: 1,
		Slots: discover.Slots{{At: 900, Tokens: discover.Tokens{Input: 1, Output: 2}}, {At: 2700, Tokens: discover.Tokens{CacheRead: 3, CacheWrite: 4}}}}
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
	zero(reflect.ValueOf(s), "summary")
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got summary
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, got, cmp.AllowUnexported(summary{}, header{}, leaf{})); diff != "" {
		t.Errorf("(-encoded +decoded):\n%s", diff)
	}
	if err := got.UnmarshalBinary(b[:len(b)-1]); err == nil {
		t.Error("a truncated payload decoded")
	}
	var empty summary
	b, _ = empty.MarshalBinary()
	if err := got.UnmarshalBinary(b); err != nil || !cmp.Equal(empty, got, cmp.AllowUnexported(summary{}, header{}, leaf{})) {
		t.Errorf("zero summary: %v %+v", err, got)
	}
}
