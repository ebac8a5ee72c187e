package stub

import "testing"

// Qwen Code offers its shell as run_shell_command among a dozen other tools
// (tool_call and tool_search among them); a tool call must name it, not the
// "bash" fallback Qwen answers with "not found in registry".
func TestChatToolCallNamesQwenShell(t *testing.T) {
	s := Start(t, nil)
	body := chatBody(true, user("edit TOOLCMD: echo x"))
	var tools []any
	for _, n := range []string{"agent", "edit", "read_file", "run_shell_command", "tool_call", "tool_search", "write_file"} {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": n}})
	}
	body["tools"] = tools
	_, evs := post(t, s, "/v1/chat/completions", body)
	var name string
	for _, e := range evs {
		for _, c := range asSlice(e.data["choices"]) {
			for _, tc := range asSlice(c.(map[string]any)["delta"].(map[string]any)["tool_calls"]) {
				if n, ok := tc.(map[string]any)["function"].(map[string]any)["name"].(string); ok && n != "" {
					name = n
				}
			}
		}
	}
	if name != "run_shell_command" {
		t.Errorf("tool call names %q, want run_shell_command", name)
	}
}
