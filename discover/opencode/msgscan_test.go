package opencode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/strictjson"
)

// msgScanCases are message files: the fixtures' and the shapes the scanner
// must hand to encoding/json (or reject exactly as it does).
func msgScanCases(t testing.TB) [][]byte {
	var out [][]byte
	files, _ := filepath.Glob(filepath.Join("testdata", "legacy", "storage", "message", "*", "*.json"))
	if len(files) == 0 {
		t.Fatal("no message fixtures")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	for _, s := range []string{
		// as e2e/bench and OpenCode 1.1 write them
		`{"agent":"build","id":"msg_19cac4222a2aHLJYZWrXbn66B4","model":{"modelID":"gpt-5","providerID":"openai"},"role":"user","sessionID":"ses_e6353be415d6WhaIlrHWgyxNIy","summary":{"diffs":[]},"time":{"created":1793629897250}}`,
		`{"agent":"build","cost":0.0170013,"finish":"tool-calls","id":"msg_19cac5b7aa322TF3eYA3WWolWf","mode":"build","modelID":"gpt-5","parentID":"msg_19cac4222a2aHLJYZWrXbn66B4","path":{"cwd":"/home/dev/tools","root":"/home/dev/tools"},"providerID":"openai","role":"assistant","sessionID":"ses_e6353be415d6WhaIlrHWgyxNIy","time":{"completed":1793629911784,"created":1793629903738},"tokens":{"cache":{"read":7051,"write":0},"input":3502,"output":292,"reasoning":0,"total":10845}}`,
		`{"role":"assistant","error":{"name":"MessageAbortedError","data":{"message":"aborted"}},"time":{"created":5}}`,
		`{"role":"assistant","error":null}`,
		// escapes, case, duplicates, null, types, numbers
		`{"id":"msg_\u0041","role":"user"}`, `{"ID":"x"}`, `{"Role":"user","role":"assistant"}`, `{"time":{"Created":1}}`,
		`{"role":"user","role":"assistant"}`, `{"time":{"created":1},"time":{"completed":2}}`,
		`{"role":null}`, `{"tokens":null}`, `{"cost":null}`, `{"time":{"created":null}}`,
		`{"role":1}`, `{"time":{"created":"1"}}`, `{"time":{"created":1.5}}`, `{"time":{"created":1e3}}`,
		`{"time":{"created":-0}}`, `{"time":{"created":99999999999999999999}}`, `{"cost":1e400}`, `{"cost":-0.0}`,
		`{"cost":01}`, `{"cost":1.}`, `{"cost":.5}`, `{"cost":-}`, `{"cost":1e}`, `{"cost":2E+3}`,
		`{"tokens":{}}`, `{"tokens":{"input":1},"tokens":{"output":2}}`, `{"tokens":{"cache":{}}}`, `{"tokens":{"cache":{"read":1,"read":2}}}`, `{"tokens":[]}`,
		`{"role":"\xff"}`, `{"x":"\xff"}`, `{"r\u00f4le":1}`, `{"rôle":1}`, "{\"\u212a\":1}", `{"ſessionID":"x"}`,
		`{"x":"a` + "\x01" + `"}`, `{"x":"\q"}`, `{"x":"\u12"}`, `{"x":[1,2,{"a":[true,false,null]}],"y":{}}`,
		`{"x":[1,]}`, `{"x":{"a":1,}}`, `{"x":tru}`, `{"x":nul}`, `{"x":[}`, `{}`, ` {} `, `{} x`, `{}{}`,
		`[]`, `null`, `"x"`, `1`, ``, `{`, `{"id"}`, `{"id":}`, `{"id":"a",}`, `{,}`, "\ufeff{}",
		`{"x":` + strings.Repeat("[", 150) + strings.Repeat("]", 150) + `}`,
		`{"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// TestDecodeMsgMatchesJSON: decodeMsg is json.Unmarshal into a msgData, in what
// it accepts and in every field it fills.
func TestDecodeMsgMatchesJSON(t *testing.T) {
	fast := 0
	for _, b := range msgScanCases(t) {
		checkDecodeMsg(t, b)
		var m msgData
		s := msgScanner{js: strictjson.Scanner{B: b}, str: func(v []byte) string { return string(v) }}
		if s.message(&m) {
			fast++
		}
	}
	// The fixtures and the usual shapes take the fast path (else it is dead weight).
	if fast < 8 {
		t.Errorf("only %d cases decoded without encoding/json", fast)
	}
	// The common shapes must not fall back.
	for _, s := range []string{
		`{"agent":"build","cost":0.0170013,"finish":"tool-calls","id":"msg_1","mode":"build","modelID":"gpt-5","parentID":"msg_0","path":{"cwd":"/home/dev/tools","root":"/"},"providerID":"openai","role":"assistant","sessionID":"ses_1","time":{"completed":1793629911784,"created":1793629903738},"tokens":{"cache":{"read":7051,"write":0},"input":3502,"output":292,"reasoning":0,"total":10845}}`,
		"{\n  \"id\": \"msg_1\",\n  \"role\": \"user\",\n  \"time\": {\n    \"created\": 1\n  },\n  \"summary\": {\"diffs\": [], \"title\": \"a \\\"b\\\"\"}\n}\n",
	} {
		var m msgData
		if s := (msgScanner{js: strictjson.Scanner{B: []byte(s)}, str: func(v []byte) string { return string(v) }}); !s.message(&m) {
			t.Errorf("fell back to encoding/json on %s", s.js.B)
		}
	}
}

func checkDecodeMsg(t *testing.T, b []byte) {
	t.Helper()
	var want msgData
	wantOK := json.Unmarshal(b, &want) == nil
	var got msgData
	gotOK := decodeMsg(b, &got, func(v []byte) string { return string(v) })
	if gotOK != wantOK {
		t.Fatalf("%.200q: decodeMsg ok %v, encoding/json ok %v", b, gotOK, wantOK)
	}
	if gotOK && !reflect.DeepEqual(got, want) {
		t.Fatalf("%.200q:\ngot  %+v\nwant %+v", b, got, want)
	}
}

// FuzzDecodeMsg: decodeMsg agrees with encoding/json on any bytes.
func FuzzDecodeMsg(f *testing.F) {
	for _, b := range msgScanCases(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecodeMsg(t, b) })
}

// TestFoldsToKey: every field's key, in any case, is caught.
func TestFoldsToKey(t *testing.T) {
	for _, ks := range [][]string{msgKeys, timeKeys, modelKeys, tokenKeys, cacheKeys} {
		for _, k := range ks {
			for _, v := range []string{k, strings.ToUpper(k), strings.ToLower(k)} {
				if !foldsToKey([]byte(v)) {
					t.Errorf("%q not caught", v)
				}
			}
		}
	}
	for _, v := range []string{"agent", "mode", "path", "summary", "total", "ids", ""} {
		if foldsToKey([]byte(v)) {
			t.Errorf("%q caught", v)
		}
	}
}
