package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The argv of Gemini CLI, Qwen Code and Copilot CLI launches and resumes
// (docs/agents/{gemini,qwen,copilot}.md, "Launch"): the prompt never in argv (each
// reads a piped stdin as the prompt), machine-readable output, the full id to resume.
func TestNewAgentPlans(t *testing.T) {
	const id = "2c5c07cf-074c-4de6-80ef-3dce625272da"
	environ := []string{"AGENTCTL_GEMINI_BIN=" + execBin(t, "gemini"), "AGENTCTL_QWEN_BIN=" + execBin(t, "qwen"),
		"AGENTCTL_COPILOT_BIN=" + execBin(t, "copilot")}
	for _, tc := range []struct {
		name string
		drv  Driver
		req  Request
		want []string // "<ID>" stands for the id agentctl picked
	}{
		{"gemini launch", Gemini{}, Request{Kind: KindLaunch, Model: "gemini-2.5-flash"},
			[]string{"-o", "stream-json", "--skip-trust", "-m", "gemini-2.5-flash"}},
		{"gemini yolo", Gemini{}, Request{Kind: KindLaunch, PermissionMode: "bypassPermissions"},
			[]string{"-o", "stream-json", "--skip-trust", "--approval-mode", "yolo"}},
		{"gemini resume", Gemini{}, Request{Kind: KindResume, SessionID: id},
			[]string{"-o", "stream-json", "--skip-trust", "--resume", id}},
		{"qwen launch", Qwen{}, Request{Kind: KindLaunch, PermissionMode: "auto-edit"},
			[]string{"-o", "stream-json", "--approval-mode", "auto-edit"}},
		{"gemini acceptEdits (a group with Claude shares the name)", Gemini{}, Request{Kind: KindLaunch, PermissionMode: "acceptEdits"},
			[]string{"-o", "stream-json", "--skip-trust", "--approval-mode", "auto_edit"}},
		{"qwen acceptEdits", Qwen{}, Request{Kind: KindLaunch, PermissionMode: "acceptEdits"},
			[]string{"-o", "stream-json", "--approval-mode", "auto-edit"}},
		{"qwen resume", Qwen{}, Request{Kind: KindResume, SessionID: id, Model: "qwen3-coder-plus"},
			[]string{"-o", "stream-json", "-m", "qwen3-coder-plus", "--resume", id}},
		{"copilot launch", Copilot{}, Request{Kind: KindLaunch, Model: "gpt-4.1"},
			[]string{"--allow-all-tools", "--output-format", "json", "--model", "gpt-4.1", "--session-id", "<ID>"}},
		{"copilot resume", Copilot{}, Request{Kind: KindResume, SessionID: id},
			[]string{"--allow-all-tools", "--output-format", "json", "--resume", id}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			req.Cwd, req.Prompt, req.Environ = "/w", "the secret prompt", environ
			p, err := tc.drv.Plan(&req)
			if err != nil {
				t.Fatal(err)
			}
			want := append([]string(nil), tc.want...)
			for i, a := range want {
				if a == "<ID>" {
					if !uuidRE().MatchString(p.SessionID) {
						t.Fatalf("pre-assigned id %q is not a uuid", p.SessionID)
					}
					want[i] = p.SessionID
				}
			}
			if diff := cmp.Diff(want, p.Args); diff != "" {
				t.Errorf("argv (-want +got):\n%s", diff)
			}
			if strings.Contains(strings.Join(p.Args, " "), "secret prompt") {
				t.Errorf("the prompt is in argv: %q", p.Args)
			}
			if req.Kind == KindResume && p.SessionID != id {
				t.Errorf("resume SessionID %q, want %q", p.SessionID, id)
			}
		})
	}
	for _, tc := range []struct {
		drv  Driver
		req  Request
		want string
	}{
		{Gemini{}, Request{Kind: KindResume, SessionID: "latest"}, "only a full session id"},
		{Qwen{}, Request{Kind: KindResume, SessionID: "2c5c07cf"}, "only a full session id"},
		{Copilot{}, Request{Kind: KindLaunch, PermissionMode: "plan"}, "--allow-all-tools"},
		{Gemini{}, Request{Kind: KindLaunch, PermissionMode: "dontAsk"}, "gemini takes default, auto_edit, yolo, plan, acceptEdits"},
		{Qwen{}, Request{Kind: KindLaunch, AppendSystemPrompt: "x"}, "not supported for qwen-code"},
	} {
		req := tc.req
		req.Cwd, req.Environ = "/w", environ
		if _, err := tc.drv.Plan(&req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %+v: err %v, want it to say %q", tc.drv.Name(), tc.req, err, tc.want)
		}
	}
}

// Confirmation comes from each CLI's own first line (recorded from the pinned CLIs
// against the e2e stub), never from anything else that mentions an id.
func TestNewAgentConfirm(t *testing.T) {
	const id = "eae0318d-2453-4c29-8b4c-7e32c961dc02"
	for _, tc := range []struct {
		drv   Driver
		lines []string
		ok    bool
	}{
		{Gemini{}, []string{"Warning: 256-color support not detected.", `{"type":"init","timestamp":"2026-12-02T03:37:01.612Z","session_id":"` + id + `","model":"auto"}`}, true},
		{Gemini{}, []string{`{"type":"message","role":"user","content":"session_id ` + id + `"}`}, false},
		{Qwen{}, []string{`{"type":"system","subtype":"init","uuid":"` + id + `","session_id":"` + id + `","cwd":"/w"}`}, true},
		{Qwen{}, []string{`{"type":"init","session_id":"` + id + `"}`}, false},
		{Copilot{}, []string{`{"type":"result","timestamp":"2026-12-02T03:38:30.381Z","sessionId":"` + id + `","exitCode":0}`}, true},
		{Copilot{}, []string{`{"type":"user.message","data":{"content":"` + id + `"}}`}, false},
	} {
		got, _, ok := tc.drv.Confirm(ls(tc.lines...), "")
		if ok != tc.ok || (ok && got != id) {
			t.Errorf("%s %q: got %q %v, want ok=%v", tc.drv.Name(), tc.lines, got, ok, tc.ok)
		}
	}
}

// Copilot prints its id only at the end, so a launch is confirmed from its own
// events.jsonl: the session.start of the pre-assigned id, or (resume) a
// session.resume written after the spawn.
func TestCopilotProbe(t *testing.T) {
	const id = "11111111-2222-4333-8444-555555555556"
	home := t.TempDir()
	dir := filepath.Join(home, ".copilot", "session-state", id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	spawned := time.Date(2026, 12, 2, 3, 38, 0, 0, time.UTC)
	p := &Probe{Kind: KindLaunch, Want: id, Environ: []string{"HOME=" + home}, Spawned: spawned}
	if _, ok := (Copilot{}).Probe(p); ok {
		t.Fatal("confirmed before events.jsonl exists")
	}
	ev := filepath.Join(dir, "events.jsonl")
	write := func(s string) {
		if err := os.WriteFile(ev, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"type":"session.start","data":{"sessionId":"` + id + `","startTime":"2026-12-02T03:38:01Z"}}` + "\n")
	if got, ok := (Copilot{}).Probe(p); !ok || got != id {
		t.Errorf("launch: %q %v", got, ok)
	}
	p.Kind = KindResume
	if _, ok := (Copilot{}).Probe(p); ok {
		t.Error("resume confirmed by the old session.start")
	}
	write(`{"type":"session.start","data":{"sessionId":"` + id + `"}}` + "\n" +
		`{"type":"session.resume","data":{"resumeTime":"2026-12-01T10:00:00Z"}}` + "\n")
	if _, ok := (Copilot{}).Probe(p); ok {
		t.Error("resume confirmed by an earlier resume")
	}
	write(`{"type":"session.start","data":{"sessionId":"` + id + `"}}` + "\n" +
		`{"type":"session.resume","data":{"resumeTime":"2026-12-02T03:38:02Z"}}` + "\n")
	if _, ok := (Copilot{}).Probe(p); !ok {
		t.Error("resume not confirmed by its session.resume")
	}
	// COPILOT_HOME moves the store.
	p.Environ = []string{"HOME=/nowhere", "COPILOT_HOME=" + filepath.Join(home, ".copilot")}
	if _, ok := (Copilot{}).Probe(p); !ok {
		t.Error("COPILOT_HOME not followed")
	}
}

func TestNewAgentClassify(t *testing.T) {
	for _, tc := range []struct {
		drv   Driver
		lines []string
		code  int
		class string
		msg   string
	}{
		{Gemini{}, []string{`{"type":"init","session_id":"x"}`, `{"type":"result","status":"success","stats":{}}`}, 0, "", ""},
		// recorded: gemini 0.61.0, the stub answering 429 with a per-day QuotaFailure; exit 173
		{Gemini{}, []string{`{"type":"init","session_id":"x"}`, `Error when talking to Gemini API Full report available at: /tmp/gemini-client-error-Turn.run-sendMessageStream-2026-12-02T03-43-05-888Z.json TerminalQuotaError: You have exhausted your daily quota on this model.`, `  status: 429`,
			`{"type":"result","timestamp":"2026-12-02T03:43:06.243Z","status":"error","error":{"type":"unknown","message":"[API Error: You have exhausted your daily quota on this model.]\nPlease wait and try again later. To increase your limits, request a quota increase through AI Studio, or switch to another /auth method"},"stats":{"total_tokens":170,"input_tokens":124,"output_tokens":46,"cached":0,"input":124,"duration_ms":0,"tool_calls":0,"models":{"gemini-3.5-flash-lite":{"total_tokens":170,"input_tokens":124,"output_tokens":46,"cached":0,"input":124},"gemini-3.8-flash":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"cached":0,"input":0}}}}`}, 173, "error", "[API Error: You have exhausted your daily quota on this model.] Please wait"},
		{Gemini{}, []string{"Please set an Auth method in your settings.json"}, 41, "startup-failed", "Auth method"},
		{Qwen{}, []string{`{"type":"system","subtype":"init","session_id":"x"}`, `{"type":"result","subtype":"success","is_error":false,"result":"ok"}`}, 0, "", ""},
		// recorded: qwen-code 0.24.4, the stub answering 429 HARDQUOTA
		{Qwen{}, []string{`{"type":"system","subtype":"init","session_id":"x"}`, `{"type":"result","subtype":"error_during_execution","uuid":"240ac615-6c40-4a44-9870-c657a1fde9f2","session_id":"b3847d6c-bace-48fe-afa3-e4d03bbddeb4","is_error":true,"duration_ms":6374,"duration_api_ms":0,"num_turns":1,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0},"permission_denials":[],"error":{"message":"Quota exhausted: You exceeded your current quota, please check your plan and billing details. Your quota will reset at 2030-01-01T00:00:00Z.\n\nPlease retry after the reset time, or switch to another API key / auth method."}}`}, 1, "error", "Quota exhausted: You exceeded your current quota"},
		{Copilot{}, []string{`{"type":"user.message","data":{}}`, `{"type":"result","sessionId":"x","exitCode":0}`}, 0, "", ""},
		{Copilot{}, []string{`{"type":"user.message","data":{}}`, `{"type":"session.error","data":{"errorType":"rate_limit","message":"Failed to get response from the AI model; retried 5 times","statusCode":429}}`, `{"type":"result","sessionId":"x","exitCode":1}`}, 1, "error", "retried 5 times"},
		{Copilot{}, []string{`{"type":"user.message","data":{}}`}, 137, "killed", "killed"},
	} {
		o := tc.drv.Classify(ls(tc.lines...), tc.code, false)
		if o.Class != tc.class || !strings.Contains(o.Message, tc.msg) {
			t.Errorf("%s %q (exit %d): %+v, want class %q with %q", tc.drv.Name(), tc.lines, tc.code, o, tc.class, tc.msg)
		}
	}
}
