package synth

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// WriteGeminiHome writes n synthetic Gemini CLI sessions under
// root/.gemini/tmp/<project>/chats in the shape Gemini CLI 0.61 writes them
// (docs/agents/gemini.md, the shared recordings): a JSONL patch log per
// session — a header, a `$set` of the message list holding the CLI's own
// `<session_context>`, then per turn the prompt, `$set` lastUpdated, the
// reply with its tokens, and for a tool call the reply restated with its
// toolCalls and the tool result. Each project dir has its .project_root and
// projects.json maps them. About 1 in 25 sessions was resumed and left a
// stray second file with the same id (a header and the context only), 1 in
// 20 ends with a prompt the API failed (rolled back by a `$set` of the
// messages), 1 in 100 carries tool results of hundreds of KB. Sessions
// spread over the 14 days before 2026-11-20T22:00Z across 40 projects. The
// same seed writes the same bytes.
func WriteGeminiHome(root string, n int, seed int64) error {
	g := &piGen{r: rand.New(rand.NewSource(seed))}
	g.filler = g.text(64 << 10)
	dir := filepath.Join(root, ".gemini")
	anchor := time.Date(2026, 11, 20, 22, 0, 0, 0, time.UTC)
	projects := map[string]string{}
	for i := 0; i < n; i++ {
		start := anchor.Add(-time.Duration(g.r.Int63n(int64(14 * 24 * time.Hour))))
		k := g.r.Intn(40)
		cwd, slug := fmt.Sprintf("/home/dev/gproject-%02d", k), fmt.Sprintf("gproject-%02d", k)
		if _, ok := projects[cwd]; !ok {
			projects[cwd] = slug
			pdir := filepath.Join(dir, "tmp", slug)
			if err := os.MkdirAll(filepath.Join(pdir, "chats"), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(pdir, ".project_root"), []byte(cwd), 0o644); err != nil {
				return err
			}
		}
		if err := g.geminiSession(filepath.Join(dir, "tmp", slug, "chats"), cwd, start, i%25 == 11, i%20 == 3, i%100 == 7); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(map[string]any{"projects": projects}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "projects.json"), b, 0o644)
}

func geminiTS(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// geminiName is session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl.
func geminiName(start time.Time, id string) string {
	return "session-" + start.UTC().Format("2006-01-02T15-04") + "-" + id[:8] + ".jsonl"
}

func (g *piGen) geminiSession(chats, cwd string, start time.Time, stray, failed, big bool) error {
	id := g.uuid4()
	h := sha256.Sum256([]byte(cwd))
	hash := hex.EncodeToString(h[:])
	header := map[string]any{"sessionId": id, "projectHash": hash, "startTime": geminiTS(start), "lastUpdated": geminiTS(start), "kind": "main"}
	ctx := map[string]any{"id": fmt.Sprintf("%032x", g.r.Uint64()), "timestamp": geminiTS(start.Add(time.Millisecond)), "type": "user",
		"content": []map[string]any{{"text": "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\nMy operating system is: linux\nThe project's temporary directory is: " + cwd + "\n" + g.words(200) + "\n</session_context>"}}}
	if stray {
		// The stray file a resume leaves: written at the resume, header and
		// context only.
		p := filepath.Join(chats, geminiName(start.Add(time.Hour), id))
		at := start.Add(time.Hour)
		h2 := map[string]any{"sessionId": id, "projectHash": hash, "startTime": geminiTS(at), "lastUpdated": geminiTS(at), "kind": "main"}
		if err := writeLines(p, at, h2, map[string]any{"$set": map[string]any{"messages": []any{ctx}, "lastUpdated": geminiTS(at)}}); err != nil {
			return err
		}
	}
	path := filepath.Join(chats, geminiName(start, id))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := &piWriter{w: bufio.NewWriterSize(f, 256<<10), now: start.Add(50 * time.Millisecond)}
	w.line(header)
	w.line(map[string]any{"$set": map[string]any{"messages": []any{ctx}, "lastUpdated": geminiTS(start)}})
	msgs := []any{ctx}
	set := func() { w.line(map[string]any{"$set": map[string]any{"lastUpdated": geminiTS(w.now)}}) }
	reply := func(text string, in, out int64, calls []map[string]any) map[string]any {
		w.now = w.now.Add(time.Duration(200+g.r.Intn(8000)) * time.Millisecond)
		m := map[string]any{"id": g.uuid4(), "timestamp": geminiTS(w.now), "type": "gemini", "content": text, "thoughts": []any{},
			"tokens": map[string]any{"input": in, "output": out, "cached": in / 10, "thoughts": 2, "tool": 0, "total": in + out + 2},
			"model":  "gemini-2.5-flash"}
		w.line(m)
		set()
		if calls != nil {
			m2 := map[string]any{}
			for k, v := range m {
				m2[k] = v
			}
			m2["toolCalls"] = calls
			w.line(m2)
		}
		return m
	}
	turns := 1 + g.r.Intn(6)
	if big {
		turns = 8
	}
	for t := 0; t < turns; t++ {
		w.now = w.now.Add(time.Duration(1+g.r.Intn(600)) * time.Second)
		prompt := map[string]any{"id": g.uuid4(), "timestamp": geminiTS(w.now), "type": "user", "content": []map[string]any{{"text": g.words(4 + g.r.Intn(30))}}}
		w.line(prompt)
		set()
		if failed && t == turns-1 {
			// The API failed: the CLI drops the prompt again.
			w.now = w.now.Add(2 * time.Second)
			w.line(map[string]any{"$set": map[string]any{"messages": msgs, "lastUpdated": geminiTS(w.now)}})
			break
		}
		msgs = append(msgs, prompt)
		if g.r.Intn(3) == 0 || big {
			callID := fmt.Sprintf("run_shell_command_%d", g.r.Int63())
			cmd := "echo " + g.words(3)
			m := reply("", 1000+int64(g.r.Intn(8000)), 20+int64(g.r.Intn(100)), []map[string]any{{"id": callID, "name": "run_shell_command",
				"args": map[string]any{"command": cmd}, "status": "success", "timestamp": geminiTS(w.now)}})
			out := g.words(20)
			if big {
				k := 256<<10 + g.r.Intn(256<<10)
				out = strings.Repeat(g.filler, k/len(g.filler)+1)[:k]
			}
			w.now = w.now.Add(time.Duration(50+g.r.Intn(3000)) * time.Millisecond)
			res := map[string]any{"id": g.uuid4(), "timestamp": geminiTS(w.now), "type": "user", "content": []map[string]any{{"functionResponse": map[string]any{
				"id": callID, "name": "run_shell_command", "response": map[string]any{"output": out}}}}}
			w.line(res)
			set()
			msgs = append(msgs, m, res)
		}
		msgs = append(msgs, reply(g.words(10+g.r.Intn(150)), 2000+int64(g.r.Intn(20000)), 30+int64(g.r.Intn(800)), nil))
	}
	return closeSynth(f, w, path)
}

// writeLines writes records as a JSONL file whose mtime is at.
func writeLines(path string, at time.Time, recs ...any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := &piWriter{w: bufio.NewWriter(f), now: at}
	for _, r := range recs {
		w.line(r)
	}
	return closeSynth(f, w, path)
}

// closeSynth flushes and closes a generated file and dates it at w.now.
func closeSynth(f *os.File, w *piWriter, path string) error {
	if err := w.w.Flush(); err != nil && w.err == nil {
		w.err = err
	}
	if err := f.Close(); err != nil && w.err == nil {
		w.err = err
	}
	if w.err != nil {
		return fmt.Errorf("write %s: %w", path, w.err)
	}
	return os.Chtimes(path, w.now, w.now)
}
