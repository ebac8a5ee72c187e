package claude

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkMsgWalk: parseRecord finds the same message and the same error as
// eachField, and the message fields it read on the way are parseMessage's.
func checkMsgWalk(t *testing.T, line []byte) (walked bool) {
	t.Helper()
	var want []byte
	wantErr := eachField(line, func(k, v []byte) bool {
		if string(k) == "message" {
			want = v
		}
		return true
	})
	var r record
	err := parseRecord(line, &r)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("parseRecord(%q) error %v, eachField's %v", line, err, wantErr)
	}
	if err != nil {
		return false
	}
	if !bytes.Equal(r.Message, want) {
		t.Fatalf("parseRecord(%q) message %q, eachField's %q", line, r.Message, want)
	}
	if diff := cmp.Diff(parseMessage(want), r.message(), cmp.AllowUnexported(message{})); diff != "" {
		t.Fatalf("message of %q (-parseMessage +walked):\n%s", line, diff)
	}
	return r.msgOK
}

// TestMsgWalk: the message is read on the walk where its end is certain, and
// left to parseMessage where a bare value could make skipValue's bracket count
// differ from the member walk.
func TestMsgWalk(t *testing.T) {
	for _, c := range []struct {
		line   string
		walked bool
	}{
		{`{"type":"assistant","message":{"id":"m1","model":"x","content":[{"type":"text","text":"a}]"}],"usage":{"input_tokens":1},"stop_reason":null},"uuid":"u"}`, true},
		{`{"message":{}}`, true},
		{`{"message":{"id":"a","id":"b"},"message":{"model":"c"}}`, true},
		{`{"message":{"model":"c"},"message":"x"}`, false},
		{`{"message":{"a":1{},"model":"m"}}`, false},    // '{' in a bare value
		{`{"message":{"a":[1},"model":"m"}}`, true},     // brackets of two kinds
		{`{"message":{"id":"x" "model":"y"}}`, false},   // no comma: skipValue still skips it
		{`{"message":{"a":tru"e","model":"m"}}`, false}, // a quote in a bare value
		{`{"message":{"model":"m"} , "type" : "user" }`, true},
		{`{"message":{"model":"m"`, false},
	} {
		if got := checkMsgWalk(t, []byte(c.line)); got != c.walked {
			t.Errorf("%s: walked %v, want %v", c.line, got, c.walked)
		}
	}
}

func FuzzMsgWalk(f *testing.F) {
	for _, s := range []string{
		`{"type":"assistant","message":{"id":"m1","model":"x","content":[{"type":"text","text":"a"}],"usage":{"input_tokens":1}},"uuid":"u"}`,
		`{"message":{"a":1{},"model":"m"}}`, `{"message":{"a":[1},"model":"m"}}`, `{"message":{"id":"x" "model":"y"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkMsgWalk(t, b) })
}
