package codex

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkScanRecord: where scanRecord answers, it answers what decode does
// (maxStr 0), or decode of the shrunk line (maxStr > 0); and where decode
// fails it does not answer.
func checkScanRecord(t *testing.T, line []byte, maxStr int) (answered bool) {
	t.Helper()
	in := line
	if maxStr > 0 {
		in = shrinkJSON(line, maxStr)
	}
	want, err := decode(in)
	var got record
	if !scanRecord(line, &got, maxStr) {
		return false
	}
	if err != nil {
		t.Fatalf("scanRecord answered for %q, which decode rejects: %v", line, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("scanRecord(%q, %d) (-decode +scanRecord):\n%s", line, maxStr, diff)
	}
	return true
}

// TestScanRecordFixtures: every line of every Codex rollout in testdata and
// the shared fixtures decodes as with decode, whole and shrunk, and the
// scanner answers for the head lines listing decodes (else it saves nothing).
func TestScanRecordFixtures(t *testing.T) {
	var files []string
	for _, root := range []string{"testdata", "../../testdata"} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") && (strings.Contains(p, "codex") || strings.Contains(p, "rollout-")) {
				files = append(files, p)
			}
			return nil
		})
	}
	lines, heads, answered := 0, 0, 0
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			lines++
			checkScanRecord(t, line, 0)
			checkScanRecord(t, line, 1024)
			typ, sub, _, _ := sniff(line)
			if typ == "session_meta" || (typ == "event_msg" && (sub == "user_message" || sub == "item_completed")) {
				heads++
				if checkScanRecord(t, line, 1024) {
					answered++
				}
			}
		}
	}
	t.Logf("%d files, %d lines, scanRecord answered %d of %d head lines", len(files), lines, answered, heads)
	if lines < 100 || heads < 20 {
		t.Fatalf("only %d lines (%d head lines) in %d files: fixtures moved?", lines, heads, len(files))
	}
	if answered < heads*8/10 {
		t.Errorf("scanRecord answered %d of %d head lines, want nearly all", answered, heads)
	}
}

// TestScanRecordLeavesToJSON: lines where decode's answer depends on what the
// scanner does not model are left to it, and the ones it models are answered.
func TestScanRecordLeavesToJSON(t *testing.T) {
	long := strings.Repeat("x", 1100)
	for _, c := range []struct {
		line     string
		maxStr   int
		answered bool
	}{
		{`{"timestamp":"2026-01-01T00:00:00Z","ordinal":0,"type":"session_meta","payload":{"id":"a","cwd":"/w","source":"exec","git":{"branch":"main","x":[1,{"y":null}]},"base_instructions":{"text":"hi \"there\""}}}`, 0, true},
		{`{"timestamp":"t","type":"session_meta","payload":{"id":"a","source":{"subagent":"review"}}}`, 0, true},
		{`{"timestamp":"t","type":"session_meta","payload":{"id":"a","source":{"subagent":"review"}}}`, 1024, false}, // a raw object under shrinking
		{`{"timestamp":"t","type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","content":[{"type":"text","text":"caf\u00e9","text_elements":[]}],"id":"i"},"turn_id":"u"}}`, 0, true},
		{`{"type":"response_item","payload":{"type":"message","role":"user","content":[]}}`, 0, true},
		{` {"type":"response_item","payload":{"content":[{"text":"é"}]}} `, 0, true},
		{`{"timestamp":"t","type":"session_meta","payload":{"id":"a","base_instructions":{"text":"` + long + `"}}}`, 1024, true},            // a long string skipped
		{"{\"type\":\"session_meta\",\"payload\":{\"id\":\"a\",\"base_instructions\":{\"text\":\"" + long + "\x01\\q\\\\\"}}}", 1024, true}, // shrinking blanks it unread
		{"{\"type\":\"session_meta\",\"payload\":{\"id\":\"a\",\"x\":\"\x01\\q\"}}", 1024, false},                                           // a short one is read
		{`{"timestamp":"t","type":"session_meta","payload":{"id":"a","cwd":"` + long + `"}}`, 1024, false},                                  // a long string kept: shrinking blanks it
		{`{"timestamp":"t","type":"session_meta","payload":{"id":"a","cwd":"` + long + `"}}`, 0, true},
		{`{"type":"response_item","payload":{"content":[{"text":"\ud83d\ude00 \ud800 \udc00\u0041 \ud800\u0041 \/\b\f\n\r\t\"\\ \u00e9"}]}}`, 0, true}, // escapes and surrogates
		{"{\"type\":\"response_item\",\"payload\":{\"content\":[{\"text\":\"\xff\xfe ok \xe2\x82\"}]}}", 0, true},                                      // invalid UTF-8
		{`{"timestamp":"t","type":"event_msg","payload":{"type":"thread_settings_applied","thread_id":"x","thread_settings":{"cwd":"/w","model":"m","other":1}}}`, 0, true},
		{`{"type":"event_msg","payload":{"thread_settings":{"Model":"m"}}}`, 0, false},
		{`{"Type":"session_meta","payload":{}}`, 0, false},      // another case: encoding/json matches it
		{`{"typ\u0065":"session_meta","payload":{}}`, 0, false}, // an escaped key
		{`{"type":"a","type":"b","payload":{}}`, 0, false},      // a repeated key
		{`{"type":5,"payload":{}}`, 0, false},                                           // a type error
		{`{"type":"a","payload":null}`, 0, false},                                       // no payload: decode's pre-envelope rules
		{`{"id":"a","timestamp":"t"}`, 0, false},                                        // pre-envelope meta
		{`{"type":"event_msg","payload":{"type":"token_count","info":null}}`, 0, false}, // a field not modeled
		{`{"type":"event_msg","payload":{"type":"x","CWD":"/w"}}`, 0, false},            // folds onto a field
		{`{"type":"event_msg","payload":{"item":{"type":"x","exit_code":1}}}`, 0, false},
		{`{"type":"event_msg","payload":{"content":[{"TEXT":"x"}]}}`, 0, false},
		{`{"type":"event_msg","payload":{"cwd":null}}`, 0, false},   // null: left to encoding/json
		{`{"type":"a","payload":{}} x`, 0, false},                   // trailing bytes
		{`{"type":"a","payload":{"x":"` + "\x01" + `"}}`, 0, false}, // a control character
		{`{"type":"a","payload":{"x":[1,2,]}}`, 0, false},           // invalid
		{`[{"type":"a"}]`, 0, false},                                // not an object
		{`{"type":"a","payload":{"x":-01}}`, 0, false},              // a bad number
		{`{"type":"a","payload":{"x":"\q"}}`, 0, false},             // a bad escape
	} {
		if got := checkScanRecord(t, []byte(c.line), c.maxStr); got != c.answered {
			t.Errorf("scanRecord answered %v for %.200s (maxStr %d), want %v", got, c.line, c.maxStr, c.answered)
		}
	}
}

// FuzzScanRecord: for any bytes, scanRecord answers as decode (of the line,
// or of the shrunk line) or not at all.
func FuzzScanRecord(f *testing.F) {
	for _, s := range []string{
		`{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x","cwd":"/w","source":"exec","git":{"branch":"b"}}}`,
		`{"timestamp":"t","type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","content":[{"type":"text","text":"hi"}]}}}`,
		`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}`,
		`{"timestamp":"t","type":"event_msg","payload":{"type":"thread_settings_applied","thread_settings":{"cwd":"/w","model":"m"}}}`,
		`{`, `null`,
	} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, b []byte, m uint8) {
		checkScanRecord(t, b, int(m%8))
	})
}

// parseTSBytes answers as parseTS, on the form Codex writes and on others.
func TestParseTSBytes(t *testing.T) {
	for _, s := range []string{
		"2026-11-23T11:24:30.501Z", "2026-11-23T11:24:30Z", "2026-11-23T11:24:30.123456789Z", "2026-11-23T11:24:30.1234567891Z",
		"2024-02-29T00:00:00.5Z", "2026-02-29T00:00:00Z", "2026-11-23T24:00:00Z", "2026-11-23T11:60:30Z", "2026-11-23T11:24:60Z",
		"2026-13-01T00:00:00Z", "0000-01-01T00:00:00Z", "2026-11-23T11:24:30.Z", "2026-11-23T11:24:30,5Z", "2026-11-23T11:24:30+02:00",
		"2026-11-23t11:24:30Z", "2026-1-23T11:24:30.501Z", "+026-11-23T11:24:30Z", "", "x",
	} {
		if got, want := parseTSBytes([]byte(s)), parseTS(s); got != want {
			t.Errorf("parseTSBytes(%q) = %v, parseTS says %v", s, got, want)
		}
	}
	if parseTSBytes([]byte("2026-11-23T11:24:30.501Z")).IsZero() {
		t.Error("Codex's own form not parsed")
	}
}

func FuzzParseTSBytes(f *testing.F) {
	f.Add("2026-11-23T11:24:30.501Z")
	f.Add("2024-02-29T23:59:59.123456789Z")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := parseTSBytes([]byte(s)), parseTS(s); got != want {
			t.Fatalf("parseTSBytes(%q) = %v, parseTS says %v", s, got, want)
		}
	})
}
