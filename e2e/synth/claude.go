package synth

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// WriteClaudeHome writes n Claude Code sessions under root/.claude/projects,
// spread over about n/50 project directories, with transcript sizes drawn
// log-uniformly from [minSize, maxSize] bytes. Each transcript looks like what
// Claude Code 2.1.x writes: queue operations or TUI header lines, prompts,
// attachments, assistant replies of one to three blocks (thinking, text,
// tool_use) that repeat the final usage on every line, tool results (which carry
// most of the bytes, as in real sessions), turn_duration and last-prompt lines.
func WriteClaudeHome(root string, n int, minSize, maxSize int64, seed int64) error {
	if minSize <= 0 || maxSize < minSize {
		return fmt.Errorf("synth: want 0 < minSize <= maxSize, got %d, %d", minSize, maxSize)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	projects := max(1, n/50)
	cwds := make([]string, projects)
	for i := range cwds {
		switch i % 7 {
		case 3:
			cwds[i] = fmt.Sprintf("/home/bench/My.Project %03d", i)
		case 5:
			cwds[i] = fmt.Sprintf("/home/bench/café-%03d/src", i)
		default:
			cwds[i] = fmt.Sprintf("/home/bench/project-%03d", i)
		}
	}
	anchor := time.Now().UTC().Truncate(time.Hour)
	for i := 0; i < n; i++ {
		cwd := cwds[rng.IntN(projects)]
		size := int64(math.Exp(math.Log(float64(minSize)) + rng.Float64()*(math.Log(float64(maxSize))-math.Log(float64(minSize)))))
		start := anchor.Add(-time.Duration(rng.Int64N(int64(6 * 24 * time.Hour))))
		w := &claudeWriter{rng: rng, id: uuid(rng), cwd: cwd, t: start, tui: rng.IntN(3) == 0}
		dir := filepath.Join(root, ".claude", "projects", claudeSlug(cwd))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if err := w.write(filepath.Join(dir, w.id+".jsonl"), size); err != nil {
			return err
		}
	}
	return nil
}

// claudeSlug is Claude's bucket name: every char outside [A-Za-z0-9] becomes '-'
// (per UTF-16 unit; the generator's paths are all in the BMP).
func claudeSlug(p string) string {
	var b strings.Builder
	for _, r := range p {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

func uuid(rng *rand.Rand) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

type claudeWriter struct {
	rng  *rand.Rand
	id   string
	cwd  string
	t    time.Time
	tui  bool
	n    int // messages written, for ids
	bw   *bufio.Writer
	size int64
	err  error
}

var words = strings.Fields(`the a function test build error file module package handler request response
cache index parse session token model prompt user agent tool result output input fix refactor
rename add remove update check lint format deploy config flag option value list map slice`)

func (w *claudeWriter) words(k int) string {
	parts := make([]string, k)
	for i := range parts {
		parts[i] = words[w.rng.IntN(len(words))]
	}
	return strings.Join(parts, " ")
}

func (w *claudeWriter) tick(max time.Duration) string {
	w.t = w.t.Add(time.Duration(w.rng.Int64N(int64(max))) + time.Millisecond)
	return w.t.Format("2006-01-02T15:04:05.000Z")
}

func (w *claudeWriter) line(v map[string]any) {
	if w.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		w.err = err
		return
	}
	b = append(b, '\n')
	n, err := w.bw.Write(b)
	w.size += int64(n)
	w.err = err
}

func (w *claudeWriter) envelope(typ, ts string) map[string]any {
	entry := "sdk-cli"
	if w.tui {
		entry = "cli"
	}
	return map[string]any{
		"type": typ, "timestamp": ts, "sessionId": w.id, "cwd": w.cwd, "version": "2.1.197",
		"gitBranch": "main", "entrypoint": entry, "userType": "external", "isSidechain": false,
		"uuid": fmt.Sprintf("%s-%06d", w.id[:8], w.n),
	}
}

func (w *claudeWriter) write(path string, target int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w.bw = bufio.NewWriterSize(f, 1<<20)
	if w.tui {
		w.line(map[string]any{"type": "permission-mode", "permissionMode": "default", "sessionId": w.id})
	}
	for turn := 0; w.err == nil && (turn == 0 || w.size < target); turn++ {
		w.turn(turn, target)
	}
	if err := w.bw.Flush(); err != nil && w.err == nil {
		w.err = err
	}
	if err := f.Close(); err != nil && w.err == nil {
		w.err = err
	}
	if w.err != nil {
		return fmt.Errorf("synth: write %s: %w", path, w.err)
	}
	return os.Chtimes(path, w.t, w.t)
}

// turn writes one prompt and the replies to it, with one tool round trip whose
// output is sized to move the file toward its target.
func (w *claudeWriter) turn(turn int, target int64) {
	prompt := w.words(3 + w.rng.IntN(20))
	ts := w.tick(time.Hour)
	if !w.tui {
		w.line(map[string]any{"type": "queue-operation", "operation": "enqueue", "timestamp": ts, "sessionId": w.id, "content": prompt})
	}
	u := w.envelope("user", ts)
	u["message"] = map[string]any{"role": "user", "content": prompt}
	u["permissionMode"] = "default"
	w.n++
	w.line(u)
	if turn == 0 {
		a := w.envelope("attachment", ts)
		a["attachment"] = map[string]any{"type": "skill_listing", "content": strings.Repeat(w.words(12)+"\n", 40)}
		w.line(a)
	}
	usage := map[string]any{
		"input_tokens": 3 + w.rng.IntN(50), "output_tokens": 20 + w.rng.IntN(900),
		"cache_creation_input_tokens": 500 + w.rng.IntN(5000), "cache_read_input_tokens": 10000 + w.rng.IntN(90000),
		"cache_creation": map[string]any{"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
	}
	cc := usage["cache_creation"].(map[string]any)
	cc["ephemeral_5m_input_tokens"] = usage["cache_creation_input_tokens"]
	msgID, reqID := fmt.Sprintf("msg_%s_%d", w.id[:8], w.n), fmt.Sprintf("req_%s_%d", w.id[:8], w.n)
	toolID := fmt.Sprintf("toolu_%s_%d", w.id[:8], w.n)
	blocks := []map[string]any{
		{"type": "thinking", "thinking": w.words(30), "signature": "c2lnbmF0dXJl"},
		{"type": "text", "text": w.words(15)},
		{"type": "tool_use", "id": toolID, "name": "Bash", "input": map[string]any{"command": "go test ./... # " + w.words(3), "description": w.words(4)}},
	}
	// One line per block, every line repeating the final usage (docs/agents/claude-code.md §3.1).
	for _, b := range blocks[w.rng.IntN(2):] {
		a := w.envelope("assistant", w.tick(3*time.Second))
		a["requestId"] = reqID
		a["message"] = map[string]any{"id": msgID, "type": "message", "role": "assistant", "model": "claude-opus-4-8",
			"content": []any{b}, "stop_reason": "tool_use", "usage": usage}
		w.n++
		w.line(a)
	}
	remaining := target - w.size
	out := int64(200 + w.rng.IntN(2000))
	if remaining > 4096 {
		out = min(remaining-2048, 1<<20+w.rng.Int64N(1<<20))
	}
	r := w.envelope("user", w.tick(30*time.Second))
	r["message"] = map[string]any{"role": "user", "content": []any{map[string]any{
		"tool_use_id": toolID, "type": "tool_result", "content": w.output(out), "is_error": w.rng.IntN(10) == 0}}}
	r["toolUseResult"] = map[string]any{"stdout": "", "stderr": "", "interrupted": false}
	w.n++
	w.line(r)
	a := w.envelope("assistant", w.tick(5*time.Second))
	a["requestId"] = reqID + "b"
	a["message"] = map[string]any{"id": msgID + "b", "type": "message", "role": "assistant", "model": "claude-opus-4-8",
		"content": []any{map[string]any{"type": "text", "text": w.words(40)}}, "stop_reason": "end_turn", "usage": usage}
	w.n++
	w.line(a)
	if w.tui {
		s := w.envelope("system", w.tick(time.Second))
		s["subtype"], s["durationMs"] = "turn_duration", 1234
		w.line(s)
	}
	w.line(map[string]any{"type": "last-prompt", "lastPrompt": prompt, "sessionId": w.id})
}

// output is tool output of about n bytes: lines of words.
func (w *claudeWriter) output(n int64) string {
	var b strings.Builder
	b.Grow(int(n) + 64)
	line := w.words(10) + "\n"
	for int64(b.Len()) < n {
		b.WriteString(line)
	}
	return b.String()
}
