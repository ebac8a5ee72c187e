package e2e

import (
	"bufio"
	"encoding/json"
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
	c := harness.NewClaude(t, claudeVersions[len(claudeVersions)-1], srv)
	dir := harness.WorkDir(t, "sdk")
	id := uuid.NewString()
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
	msg, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "TOOLCMD: touch sdk-made-this"}})
	io.WriteString(stdin, string(msg)+"\n")

	var req struct {
		RequestID string `json:"request_id"`
		Request   struct {
			Subtype  string          `json:"subtype"`
			ToolName string          `json:"tool_name"`
			Input    json.RawMessage `json:"input"`
		} `json:"request"`
	}
	deadline := time.After(120 * time.Second)
	for req.RequestID == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("claude closed its output before asking")
			}
			if strings.Contains(l, `"control_request"`) {
				json.Unmarshal([]byte(l), &req)
				t.Logf("control request: %s", l)
			}
		case <-deadline:
			t.Fatal("no can_use_tool control request within 120 s")
		}
	}
	asked := time.Now()
	a := harness.NewAgentctl(t, c.Home)
	time.Sleep(2 * time.Second)
	reg, _ := os.ReadFile(c.Registry(cmd.Process.Pid))
	t.Logf("registry while asking: %s", reg)
	s := a.Status(t, id)
	t.Logf("status while asking (%s after the request): %s %s %s", time.Since(asked).Round(time.Millisecond), s.Status, s.Evidence, s.EvidenceDetail)
	if s.Status != "waiting" || s.Evidence != "registry" || !strings.Contains(s.EvidenceDetail, "permission prompt") {
		t.Errorf("status %s (%s: %s) while the permission tool has not answered; want waiting", s.Status, s.Evidence, s.EvidenceDetail)
	}
	resp, _ := json.Marshal(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": req.RequestID,
		"response": map[string]any{"behavior": "allow", "updatedInput": json.RawMessage(req.Request.Input)}}})
	io.WriteString(stdin, string(resp)+"\n")
	harness.Eventually(t, 60*time.Second, func() string {
		if s := a.Status(t, id); s.Status == "waiting" || !exists(dir+"/sdk-made-this") {
			return "still waiting, or the allowed call did not run: " + s.Status + " " + s.EvidenceDetail
		}
		return ""
	})
}
