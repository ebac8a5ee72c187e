package synth

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// WritePiHome writes n synthetic pi / pi-rust sessions under root/.pi/agent/sessions
// in the shape pi 0.73.1 writes them (docs/agents/pi.md §2): a header, model_change and
// thinking_level_change, nested messages with usage and cost, tool round trips,
// provider-error retries, interrupted turns, abandoned branches. About 1 in 20 files
// is pi-rust (8-char file-name suffix, UUIDv4 id, model fields in the header) and 1
// in 100 is a multi-MB transcript (large tool results). Sessions spread over the 14
// days before 2026-11-20T22:00Z across 60 project dirs, some of whose slugs collide
// (/home/dev/a-b vs /home/dev/a/b). The same seed writes the same bytes.
func WritePiHome(root string, n int, seed int64) error {
	g := &piGen{r: rand.New(rand.NewSource(seed))}
	g.filler = g.text(64 << 10)
	sessions := filepath.Join(root, ".pi", "agent", "sessions")
	anchor := time.Date(2026, 11, 20, 22, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		start := anchor.Add(-time.Duration(g.r.Int63n(int64(14 * 24 * time.Hour))))
		cwd := piCwd(g.r.Intn(60))
		dir := filepath.Join(sessions, piSlug(cwd))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		rust := i%20 == 13
		big := i%100 == 7
		if err := g.session(dir, cwd, start, rust, big); err != nil {
			return err
		}
	}
	return nil
}

// piCwd returns project dirs; pairs 2k/2k+1 below 10 share a slug.
func piCwd(k int) string {
	switch {
	case k < 10 && k%2 == 0:
		return fmt.Sprintf("/home/dev/svc-%d", k/2)
	case k < 10:
		return fmt.Sprintf("/home/dev/svc/%d", k/2)
	}
	return fmt.Sprintf("/home/dev/project-%02d", k)
}

// piSlug is pi's per-cwd folder name (lossy on purpose).
func piSlug(cwd string) string {
	s := strings.TrimPrefix(cwd, "/")
	s = strings.NewReplacer("/", "-", "\\", "-", ":", "-").Replace(s)
	return "--" + s + "--"
}

type piGen struct {
	r      *rand.Rand
	filler string
	seq    int
}

var piWords = strings.Fields("the a cache layer request handler test fix add remove refactor config server client " +
	"error retry timeout index parse file line token model session build deploy check lint docs api route query")

func (g *piGen) text(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(piWords[g.r.Intn(len(piWords))])
		if g.r.Intn(12) == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()[:n]
}

func (g *piGen) words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = piWords[g.r.Intn(len(piWords))]
	}
	return strings.Join(w, " ")
}

func (g *piGen) entryID() string {
	g.seq++
	return fmt.Sprintf("%08x", uint32(g.seq)*2654435761)
}

// uuid7 is a UUIDv7 for ms with random bits; uuid4 a random UUIDv4.
func (g *piGen) uuid7(ms int64) string {
	var b [16]byte
	g.r.Read(b[:])
	for i := 0; i < 6; i++ {
		b[i] = byte(uint64(ms) >> (40 - 8*i))
	}
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (g *piGen) uuid4() string {
	var b [16]byte
	g.r.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func piTS(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// piWriter appends records, tracking the parent chain and the clock.
type piWriter struct {
	w      *bufio.Writer
	err    error
	parent any // nil or the last entry id
	now    time.Time
}

func (w *piWriter) line(v any) {
	if w.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		w.err = err
		return
	}
	if _, err := w.w.Write(append(b, '\n')); err != nil {
		w.err = err
	}
}

func (w *piWriter) entry(g *piGen, typ string, fields map[string]any) string {
	id := g.entryID()
	e := map[string]any{"type": typ, "id": id, "parentId": w.parent, "timestamp": piTS(w.now)}
	for k, v := range fields {
		e[k] = v
	}
	w.line(e)
	w.parent = id
	return id
}

func piUsage(in, out int64) map[string]any {
	ci, co := float64(in)*1/1e6, float64(out)*2/1e6
	return map[string]any{"input": in, "output": out, "cacheRead": 0, "cacheWrite": 0, "totalTokens": in + out,
		"cost": map[string]any{"input": ci, "output": co, "cacheRead": 0, "cacheWrite": 0, "total": ci + co}}
}

func (g *piGen) assistant(w *piWriter, content []map[string]any, stop string, in, out int64, errMsg string) {
	started := w.now
	w.now = w.now.Add(time.Duration(300+g.r.Intn(20000)) * time.Millisecond)
	m := map[string]any{"role": "assistant", "content": content, "api": "openai-completions", "provider": "fakeoai",
		"model": "fake-model", "usage": piUsage(in, out), "stopReason": stop, "timestamp": started.UnixMilli(),
		"responseId": fmt.Sprintf("chatcmpl-%d", started.UnixNano())}
	if errMsg != "" {
		m["errorMessage"] = errMsg
	}
	w.entry(g, "message", map[string]any{"message": m})
}

func (g *piGen) user(w *piWriter, text string) {
	w.now = w.now.Add(time.Duration(1+g.r.Intn(600)) * time.Second)
	w.entry(g, "message", map[string]any{"message": map[string]any{"role": "user",
		"content": []map[string]any{{"type": "text", "text": text}}, "timestamp": w.now.UnixMilli()}})
}

func (g *piGen) session(dir, cwd string, start time.Time, rust, big bool) error {
	id := g.uuid7(start.UnixMilli())
	name := strings.NewReplacer(":", "-", ".", "-").Replace(piTS(start)) + "_" + id + ".jsonl"
	hdr := map[string]any{"type": "session", "version": 3, "id": id, "timestamp": piTS(start), "cwd": cwd}
	if rust {
		id = g.uuid4()
		name = start.UTC().Format("2006-01-02T15-04-05.000Z") + "_" + id[:8] + ".jsonl"
		hdr = map[string]any{"type": "session", "version": 3, "id": id, "timestamp": piTS(start), "cwd": cwd,
			"provider": "fakeoai", "modelId": "fake-model", "thinkingLevel": "off"}
	}
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := &piWriter{w: bufio.NewWriterSize(f, 256<<10), now: start.Add(10 * time.Millisecond)}
	w.line(hdr)
	w.entry(g, "model_change", map[string]any{"provider": "fakeoai", "modelId": "fake-model"})
	w.entry(g, "thinking_level_change", map[string]any{"thinkingLevel": "off"})

	turns := 1 + g.r.Intn(6)
	if big {
		turns = 8
	}
	ending := g.r.Intn(20) // 0: provider error, 1: interrupted mid-tool, else done
	for t := 0; t < turns; t++ {
		g.user(w, g.words(4+g.r.Intn(30)))
		if t == 0 && ending == 0 {
			for i := 0; i < 3; i++ {
				g.assistant(w, []map[string]any{}, "error", 0, 0, "Connection error.")
			}
			break
		}
		if g.r.Intn(3) == 0 || big {
			callID := fmt.Sprintf("call_%d", g.seq)
			cmd := "echo " + g.words(3)
			g.assistant(w, []map[string]any{{"type": "toolCall", "id": callID, "name": "bash",
				"arguments": map[string]any{"command": cmd}}}, "toolUse", 500+int64(g.r.Intn(5000)), 20+int64(g.r.Intn(200)), "")
			out := g.words(20)
			if big {
				n := 256<<10 + g.r.Intn(256<<10)
				out = strings.Repeat(g.filler, n/len(g.filler)+1)[:n]
			}
			w.now = w.now.Add(time.Duration(50+g.r.Intn(3000)) * time.Millisecond)
			w.entry(g, "message", map[string]any{"message": map[string]any{"role": "toolResult", "toolCallId": callID,
				"toolName": "bash", "content": []map[string]any{{"type": "text", "text": out}}, "isError": false,
				"timestamp": w.now.UnixMilli()}})
			if t == turns-1 && ending == 1 {
				break // killed while the tool ran: the leaf is the tool result
			}
		}
		if t == 1 && g.r.Intn(10) == 0 {
			// An abandoned branch: an answer, then the user went back one step.
			branchFrom := w.parent
			g.assistant(w, []map[string]any{{"type": "text", "text": g.words(30)}}, "stop", 800, 60, "")
			w.parent = branchFrom
		}
		g.assistant(w, []map[string]any{{"type": "text", "text": g.words(10 + g.r.Intn(150))}}, "stop",
			800+int64(g.r.Intn(20000)), 30+int64(g.r.Intn(800)), "")
	}
	if g.r.Intn(15) == 0 {
		w.entry(g, "session_info", map[string]any{"name": g.words(3)})
	}
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
