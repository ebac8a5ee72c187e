package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/e2e/harness"
	"github.com/agentctl/agentctl/e2e/stub"
)

// Claude Code in print mode with its permission prompts routed to the SDK host
// (--input-format stream-json --permission-prompt-tool stdio): while the host
// has not answered a can_use_tool control request, the session waits on the
// user. Recorded on 2.1.329: the registry entry says `"status":"waiting",
// "waitingFor":"permission prompt"` as for the TUI, so agentctl reports
// waiting on registry evidence; allowed, the call runs and the wait is over.
func TestClaudePrintPermissionToolWaiting(t *testing.T) {
	harness.Require(t)
	t.Parallel()
	srv := stub.Start(t, nil)
	c := harness.NewClaude(t, harness.ClaudeNewest, srv)
	dir := harness.WorkDir(t, "sdk")
	id := uuid.NewString()
	cmd, stdin, lines := startClaudeSDK(t, c, dir, id)
	sdkUser(stdin, "TOOLCMD: touch sdk-made-this")
	var req controlRequest
	l := waitSDKLine(t, lines, `"control_request"`, 120*time.Second)
	json.Unmarshal([]byte(l), &req)
	t.Logf("control request: %s", l)
	asked := time.Now()
	a := harness.NewAgentctl(t, c.Home)
	time.Sleep(2 * time.Second)
	reg, _ := os.ReadFile(c.Registry(cmd.Process.Pid))
	t.Logf("registry while asking: %s", reg)
	// Claude writes "waiting" to its registry entry on its own schedule after
	// it sent the control request (under load the registry lags what the
	// session shows, docs/agents/claude-code.md §4.3): waited for, not read once.
	harness.Eventually(t, 15*time.Second, func() string {
		s := a.Status(t, id)
		if s.Status != "waiting" || s.Evidence != "registry" || !strings.Contains(s.EvidenceDetail, "permission prompt") {
			return fmt.Sprintf("status %s (%s: %s) while the permission tool has not answered; want waiting", s.Status, s.Evidence, s.EvidenceDetail)
		}
		t.Logf("status while asking (%s after the request): %s %s %s", time.Since(asked).Round(time.Millisecond), s.Status, s.Evidence, s.EvidenceDetail)
		return ""
	})
	sdkAllow(stdin, req.RequestID, req.Request.Input)
	harness.Eventually(t, 60*time.Second, func() string {
		if s := a.Status(t, id); s.Status == "waiting" || !exists(dir+"/sdk-made-this") {
			return "still waiting, or the allowed call did not run: " + s.Status + " " + s.EvidenceDetail
		}
		return ""
	})
}

// startClaudeSDK starts `claude -p` as an SDK host drives it: stream-json in and
// out, permission prompts routed to the host (--permission-prompt-tool stdio).
// It returns the process, its stdin and its stdout lines.
func startClaudeSDK(t *testing.T, c *harness.Claude, dir, id string) (*exec.Cmd, io.WriteCloser, <-chan string) {
	t.Helper()
	cmd := exec.Command(c.Bin, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--permission-prompt-tool", "stdio", "--permission-mode", "default", "--session-id", id)
	cmd.Dir = dir
	cmd.Env = c.Env.List()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return cmd, stdin, lines
}

// sdkUser writes one user message to a stream-json stdin.
func sdkUser(stdin io.Writer, text string) {
	msg, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
	io.WriteString(stdin, string(msg)+"\n")
}

// sdkAllow answers a can_use_tool control request: allow, input unchanged.
func sdkAllow(stdin io.Writer, requestID string, input json.RawMessage) {
	resp, _ := json.Marshal(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": requestID,
		"response": map[string]any{"behavior": "allow", "updatedInput": input}}})
	io.WriteString(stdin, string(resp)+"\n")
}

// controlRequest is a can_use_tool control request on a stream-json stdout.
type controlRequest struct {
	RequestID string `json:"request_id"`
	Request   struct {
		Subtype  string          `json:"subtype"`
		ToolName string          `json:"tool_name"`
		Input    json.RawMessage `json:"input"`
	} `json:"request"`
}

// waitSDKLine returns the first stdout line containing want.
func waitSDKLine(t *testing.T, lines <-chan string, want string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("claude closed its output before a line with %s", want)
			}
			if strings.Contains(l, want) {
				return l
			}
		case <-deadline:
			t.Fatalf("no line with %s within %s", want, timeout)
		}
	}
}
