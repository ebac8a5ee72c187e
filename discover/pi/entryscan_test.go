package pi

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkScanEntry: where scanEntry answers, it answers what json.Unmarshal
// does; and where json.Unmarshal fails it does not answer.
func checkScanEntry(t *testing.T, line []byte) (answered bool) {
	t.Helper()
	var want sumEntry
	err := json.Unmarshal(line, &want)
	var got sumEntry
	if !scanEntry(line, &got) {
		return false
	}
	if err != nil {
		t.Fatalf("scanEntry answered for %q, which json.Unmarshal rejects: %v", line, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("scanEntry(%q) (-json.Unmarshal +scanEntry):\n%s", line, diff)
	}
	// Where it says it knows message.content, the first prompt taken from it
	// is firstPrompt's (which decodes the line with encoding/json).
	var b entryBuf
	var e sumEntry
	scanEntryInto(line, &e, &b, &sumMessage{}, &usage{}, new(string))
	if b.contentKnown && b.hasMessage {
		if got, want := contentText(b.content, false), firstPrompt(line); got != want {
			t.Fatalf("prompt of %q from message.content %q = %q, firstPrompt says %q", line, b.content, got, want)
		}
	}
	return true
}

// TestScanEntryContent: message.content is taken from the scan only where it
// is the value encoding/json would pick.
func TestScanEntryContent(t *testing.T) {
	for _, c := range []struct {
		line  string
		known bool
	}{
		{`{"message":{"role":"user","content":"hi"}}`, true},
		{`{"message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}`, true},
		{`{"message":{"role":"user"}}`, true},
		{`{"message":{"role":"user","content":"a","content":"b"}}`, false}, // the last one wins there
		{`{"message":{"role":"user","content":"a","Content":"b"}}`, false}, // so does another case
		{`{"message":{"role":"user","CONTENT":"a"}}`, false},
		{`{"content":"x","message":{"role":"user","content":"a"}}`, true}, // not the message's
	} {
		var b entryBuf
		var e sumEntry
		if !scanEntryInto([]byte(c.line), &e, &b, &sumMessage{}, &usage{}, new(string)) {
			t.Fatalf("scanEntry did not answer for %s", c.line)
		}
		if b.contentKnown != c.known {
			t.Errorf("%s: content known %v, want %v", c.line, b.contentKnown, c.known)
		}
		checkScanEntry(t, []byte(c.line))
	}
}

// TestScanEntryFixtures: every line of every pi session in testdata and the
// shared fixtures decodes as with encoding/json, and the scanner answers for
// nearly all of them (else it saves nothing).
func TestScanEntryFixtures(t *testing.T) {
	var files []string
	for _, root := range []string{"testdata", "../../testdata"} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
				files = append(files, p)
			}
			return nil
		})
	}
	lines, answered := 0, 0
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
			if checkScanEntry(t, line) {
				answered++
			}
		}
	}
	if lines < 100 {
		t.Fatalf("only %d lines in %d files: fixtures moved?", lines, len(files))
	}
	if answered < lines*9/10 {
		t.Errorf("scanEntry answered %d of %d lines, want nearly all", answered, lines)
	}
}

// TestScanEntryLeavesToJSON: lines where encoding/json's answer depends on
// what the scanner does not model are left to it, and the ones it models are
// answered.
func TestScanEntryLeavesToJSON(t *testing.T) {
	for _, c := range []struct {
		line     string
		answered bool
	}{
		{`{"type":"message","id":"a","timestamp":"2026-01-01T00:00:00Z","message":{"role":"assistant","model":"m","usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"cost":{"total":0.5}},"timestamp":1767225600000,"content":[{"type":"text","text":"hi \"there\""}]}}`, true},
		{`{"type":"model_change","provider":"p","modelId":"m","name":null,"message":null}`, true},
		{` {"type":"session_info","name":"t\u00e9"} `, true},
		{`{"type":"x","message":{"usage":null,"timestamp":"2026-01-01T00:00:00Z"}}`, true},
		{`{"TYPE":"message"}`, false},                      // another case: encoding/json matches it
		{`{"typ\u0065":"message"}`, false},                 // an escaped key
		{`{"type":"a","type":"b"}`, false},                 // a repeated key
		{`{"type":5}`, false},                              // a type error
		{`{"message":{"usage":{"input":1.5}}}`, false},     // not an int64
		{`{"message":{"usage":{"input":1e99999}}}`, false}, // out of range
		{`{"type":"a"} x`, false},                          // trailing bytes
		{`{"type":"a","content":"\x01"}`, false},           // a control character
		{`{"type":"a","content":[1,2,]}`, false},           // invalid
		{`[{"type":"a"}]`, false},                          // not an object
		{`{"type":"a","x":-01}`, false},                    // a bad number
		{`{"type":"a","x":"\q"}`, false},                   // a bad escape
		{`{"type":"\ud800","message":{"role":"us\u0065r"}}`, true},
		{`{"type":"abcdefghijklmnopq\"rs","id":"abcdefgh\\ijklmnop","x":"abcdefgh\x01ijklmnop"}`, false}, // a control character past eight bytes
		{`{"type":"abcdefghijklmnopq\"rs","id":"abcdefgh\\ijklmnop","provider":"éèabcdefghijk"}`, true},
		// a clean line's skipped strings are found by their quotes alone
		{`{"type":"a","content":[{"text":"x\"y\\","k\\":"\\"}],"id":"b"}`, true},
		{`{"type":"a","content":"\u00e9\/\b\f\n\r\t\"","id":"b"}`, true},
		{"{\"type\":\"a\",\t\"content\":\"x\"}\r", true}, // tab and CR between tokens: valid, not clean
		{"{\"type\":\"a\",\"content\":\"x\ty\"}", false}, // a tab in a skipped string
		{`{"type":"a","content":"\u12G4"}`, false},       // a bad \u escape in a skipped string
		{`{"type":"a","content":"abc\`, false},           // a line ending in a backslash
		{`{"type":"a","content":"x"\,"id":"b"}`, false},  // a backslash outside a string
		{`{"type":"a","content":"x\"}`, false},           // the closing quote escaped
		// cost and timestamp forms, decoded here or by their own UnmarshalJSON
		{`{"message":{"usage":{"cost":1.25},"timestamp":1767225600000.5}}`, true},
		{`{"message":{"usage":{"cost":{"input":1,"total":2.5e-3}},"timestamp":"2026-01-01T00:00:00Z"}}`, true},
		{`{"message":{"usage":{"cost":{"total":1e400}},"timestamp":1e400}}`, true},
		{`{"message":{"usage":{"cost":{"total":"NaN","x":[1]}},"timestamp":null}}`, true},
		{`{"message":{"usage":{"cost":{"total":null}},"timestamp":{"a":1}}}`, true},
		{`{"message":{"usage":{"cost":{"Total":3,"total":4}}}}`, true},
		{`{"message":{"usage":{"cost":{"total":3,"total":4}}}}`, true},
		{`{"message":{"usage":{"cost":"7"}}}`, true},
	} {
		line := []byte(strings.ReplaceAll(c.line, `\x01`, "\x01"))
		if got := checkScanEntry(t, line); got != c.answered {
			t.Errorf("scanEntry answered %v for %s, want %v", got, line, c.answered)
		}
	}
}

// FuzzScanEntry: for any bytes, scanEntry answers as json.Unmarshal or not at
// all.
func FuzzScanEntry(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","id":"a","timestamp":"2026-01-01T00:00:00Z","message":{"role":"assistant","model":"m","provider":"p","usage":{"input":1,"output":-2,"cost":{"total":"NaN"}},"timestamp":1e300}}`,
		`{"type":"message","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}`,
		`{"type":"session_info","name":"x"}`,
		`{"type":"model_change","provider":"p","modelId":"m"}`,
		`{`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkScanEntry(t, b)
	})
}

// TestFeedCopiesWhatItKeeps: scanEntry's strings alias the line, which the
// reader reuses; what the summary keeps must not change when it is
// overwritten.
func TestFeedCopiesWhatItKeeps(t *testing.T) {
	var s summary
	for _, l := range []string{
		`{"type":"session","id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/x"}`,
		`{"type":"session_info","name":"title"}`,
		`{"type":"model_change","provider":"prov","modelId":"mod"}`,
		`{"type":"message","message":{"role":"assistant","model":"m2","stopReason":"weird","errorMessage":"boom"}}`,
		`{"type":"message","message":{"role":"assistant","model":"m3","stopReason":"odd"}}`,
	} {
		line := []byte(l)
		s.feed(line)
		for i := range line {
			line[i] = 'X'
		}
	}
	want := summary{Title: "title", Model: "m3", Models: []string{"prov/mod", "m2", "m3"},
		Leaf: leaf{Role: "assistant", StopReason: "odd"}}
	got := summary{Title: s.Title, Model: s.Model, Models: s.Models, Leaf: leaf{Role: s.Leaf.Role, StopReason: s.Leaf.StopReason, ErrorMessage: s.Leaf.ErrorMessage}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summary after the lines were overwritten (-want +got):\n%s", diff)
	}
}
