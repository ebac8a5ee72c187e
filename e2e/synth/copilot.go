package synth

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// WriteCopilotHome writes n synthetic GitHub Copilot CLI sessions under
// root/.copilot/session-state/<id>/ in the shape Copilot CLI 1.0 writes them
// (docs/agents/copilot.md, the shared recordings): events.jsonl (session.start,
// the ~20 KB system.message, per turn user.message, assistant.turn_start,
// session.usage_record, assistant.message, tool.execution_start/_complete,
// assistant.turn_end, and session.shutdown with cumulative modelMetrics),
// workspace.yaml, checkpoints/index.md, rewind-file-snapshots/tracking.json,
// .workspace-fork.lock, and .session-operation-locks/<id>.lock. About 1 in 5
// sessions was resumed (session.resume, more turns, a second shutdown), 1 in
// 20 ends in a session.error (429), 1 in 100 carries tool results of hundreds
// of KB. Sessions spread over the 14 days before 2026-11-20T22:00Z across 40
// projects. The same seed writes the same bytes.
func WriteCopilotHome(root string, n int, seed int64) error {
	g := &piGen{r: rand.New(rand.NewSource(seed))}
	g.filler = g.text(64 << 10)
	system := "You are the GitHub Copilot CLI, a terminal assistant built by GitHub.\n\n# Tone and style\n" + g.text(20<<10)
	state := filepath.Join(root, ".copilot", "session-state")
	if err := os.MkdirAll(filepath.Join(state, ".session-operation-locks"), 0o755); err != nil {
		return err
	}
	anchor := time.Date(2026, 11, 20, 22, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		start := anchor.Add(-time.Duration(g.r.Int63n(int64(14 * 24 * time.Hour))))
		cwd := fmt.Sprintf("/home/dev/cproject-%02d", g.r.Intn(40))
		if err := g.copilotSession(state, cwd, system, start, i%5 == 2, i%20 == 3, i%100 == 7); err != nil {
			return err
		}
	}
	return nil
}

func (g *piGen) copilotSession(state, cwd, system string, start time.Time, resumed, failed, big bool) error {
	id := g.uuid4()
	dir := filepath.Join(state, id)
	for _, d := range []string{"checkpoints", "rewind-file-snapshots"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	path := filepath.Join(dir, "events.jsonl")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := &piWriter{w: bufio.NewWriterSize(f, 256<<10), now: start}
	var parent any
	ev := func(typ string, data map[string]any) {
		u := g.uuid4()
		w.line(map[string]any{"type": typ, "data": data, "id": u, "timestamp": geminiTS(w.now), "parentId": parent})
		parent = u
	}
	model := "claude-sonnet-4.5"
	ctx := map[string]any{"cwd": cwd, "gitRoot": cwd, "branch": "main", "headCommit": fmt.Sprintf("%016x%016x", g.r.Uint64(), g.r.Uint64())}
	ev("session.start", map[string]any{"sessionId": id, "version": 1, "producer": "copilot-agent", "copilotVersion": "1.0.102",
		"startTime": geminiTS(start), "selectedModel": model, "context": ctx, "alreadyInUse": false})
	first := ""
	var in, out, cr, cw int64
	requests, seq := 0, 0
	shutdown := func() {
		ev("session.shutdown", map[string]any{"shutdownType": "routine", "accountingSnapshot": map[string]any{"totalPremiumRequestCost": 0.0, "totalUserRequests": requests,
			"sessionStartTime": geminiTS(start)}, "modelMetrics": map[string]any{model: map[string]any{"requests": map[string]any{"count": requests, "cost": 0.0},
			"usage": map[string]any{"inputTokens": in, "outputTokens": out, "cacheReadTokens": cr, "cacheWriteTokens": cw}}}})
	}
	usage := func(initiator string) string {
		w.now = w.now.Add(time.Duration(200+g.r.Intn(8000)) * time.Millisecond)
		seq++
		callID := fmt.Sprintf("msg_%x", g.r.Uint64())
		i, o := 2000+int64(g.r.Intn(20000)), 30+int64(g.r.Intn(800))
		c, c2 := i/5, int64(g.r.Intn(50))
		in, out, cr, cw = in+i, out+o, cr+c, cw+c2
		requests++
		ev("session.usage_record", map[string]any{"usage": map[string]any{"model": model, "modelDisplayName": model, "inputTokens": i, "outputTokens": o,
			"cacheReadTokens": c, "cacheWriteTokens": c2, "cost": 0.0, "duration": 100 + g.r.Intn(3000), "initiator": initiator,
			"interactionType": "conversation-agent", "modelProvider": "anthropic", "apiCallId": callID,
			"accounting": map[string]any{"sourceSessionId": id, "sequence": seq, "usageId": callID}}})
		return callID
	}
	segments := 1
	if resumed {
		segments = 2
	}
	for seg := 0; seg < segments; seg++ {
		if seg > 0 {
			w.now = w.now.Add(time.Duration(1+g.r.Intn(24)) * time.Hour)
			ev("session.resume", map[string]any{"resumeTime": geminiTS(w.now), "selectedModel": model, "context": ctx, "alreadyInUse": false})
		}
		turns := 1 + g.r.Intn(5)
		if big {
			turns = 8
		}
		for t := 0; t < turns; t++ {
			w.now = w.now.Add(time.Duration(1+g.r.Intn(600)) * time.Second)
			prompt := g.words(4 + g.r.Intn(30))
			if first == "" {
				first = prompt
			}
			msgID, inter := g.uuid4(), g.uuid4()
			ev("user.message", map[string]any{"content": prompt, "transformedContent": "<current_datetime>" + geminiTS(w.now) + "</current_datetime>\n\n" + prompt,
				"messageId": msgID, "delivery": "idle", "interactionId": inter, "turnId": "0"})
			if seg == 0 && t == 0 {
				ev("system.message", map[string]any{"role": "system", "content": system})
			}
			ev("assistant.turn_start", map[string]any{"turnId": "0", "interactionId": inter})
			if failed && seg == segments-1 && t == turns-1 {
				w.now = w.now.Add(6 * time.Second)
				ev("session.error", map[string]any{"errorType": "rate_limit", "message": "Failed to get response from the AI model; retried 5 times Last error: 429 You exceeded your current quota",
					"statusCode": 429, "originatingMessageId": msgID})
				break
			}
			turn := 0
			if g.r.Intn(3) == 0 || big {
				call := usage("user")
				toolID := fmt.Sprintf("toolu_%x", g.r.Uint32())
				args := map[string]any{"command": "echo " + g.words(3), "description": g.words(3)}
				ev("assistant.message", map[string]any{"messageId": g.uuid4(), "originatingMessageId": msgID, "model": model, "content": "",
					"toolRequests":  []map[string]any{{"toolCallId": toolID, "name": "bash", "arguments": args, "type": "function"}},
					"interactionId": inter, "turnId": "0", "apiCallId": call})
				ev("tool.execution_start", map[string]any{"toolCallId": toolID, "toolName": "bash", "arguments": args, "turnId": "0", "model": model})
				res := g.words(20)
				if big {
					k := 256<<10 + g.r.Intn(256<<10)
					res = strings.Repeat(g.filler, k/len(g.filler)+1)[:k]
				}
				w.now = w.now.Add(time.Duration(50+g.r.Intn(3000)) * time.Millisecond)
				ev("tool.execution_complete", map[string]any{"toolCallId": toolID, "model": model, "interactionId": inter, "turnId": "0", "success": true,
					"result": map[string]any{"content": res}})
				ev("assistant.turn_end", map[string]any{"turnId": "0"})
				turn = 1
				ev("assistant.turn_start", map[string]any{"turnId": fmt.Sprint(turn), "interactionId": inter})
			}
			initiator := "user"
			if turn > 0 {
				initiator = "agent"
			}
			call := usage(initiator)
			ev("assistant.message", map[string]any{"messageId": g.uuid4(), "originatingMessageId": msgID, "model": model, "content": g.words(10 + g.r.Intn(150)),
				"toolRequests": []any{}, "interactionId": inter, "turnId": fmt.Sprint(turn), "apiCallId": call})
			ev("assistant.turn_end", map[string]any{"turnId": fmt.Sprint(turn)})
		}
		shutdown()
	}
	if err := closeSynth(f, w, path); err != nil {
		return err
	}
	ws := fmt.Sprintf("id: %s\ncwd: %s\ngit_root: %s\nbranch: main\nclient_name: github/cli\nname: %s\nuser_named: false\nsummary_count: 0\nfork_count: 0\ncreated_at: %s\nupdated_at: %s\n",
		id, cwd, cwd, first, geminiTS(start), geminiTS(w.now))
	files := map[string]string{
		"workspace.yaml":                              ws,
		"checkpoints/index.md":                        "# Checkpoints\n",
		"rewind-file-snapshots/tracking.json":         `{"version":1,"snapshots":[]}`,
		".workspace-fork.lock":                        "",
		"../.session-operation-locks/" + id + ".lock": "",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
		if err := os.Chtimes(p, w.now, w.now); err != nil {
			return err
		}
	}
	return os.Chtimes(dir, w.now, w.now)
}
