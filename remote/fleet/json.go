package fleet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"
)

// writeJSON prints v as agentctl prints every JSON document: indented by two
// spaces, HTML characters as they are.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// eachJSON calls f for each JSON value of b (one document, or NDJSON).
func eachJSON(b []byte, f func(json.RawMessage)) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var v json.RawMessage
		if err := dec.Decode(&v); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		f(v)
	}
}

// withHost returns the JSON object v with "host" as its first field (v as it
// is when it is not an object or already has a host).
func withHost(v json.RawMessage, h string) json.RawMessage {
	t := bytes.TrimSpace(v)
	if len(t) < 2 || t[0] != '{' {
		return v
	}
	var probe struct {
		Host *string `json:"host"`
	}
	if json.Unmarshal(t, &probe) == nil && probe.Host != nil {
		return v
	}
	name, _ := json.Marshal(h)
	rest := bytes.TrimSpace(t[1:])
	out := append([]byte(`{"host":`), name...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

func compactJSON(v []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}

// jsonHostWriter adds the host to every JSON value streamed through it (NDJSON
// of --follow and wait, or one document), value by value as they complete.
type jsonHostWriter struct {
	w    io.Writer
	text func(string) string // for what is not JSON after all
	host string
	mu   *sync.Mutex
	pr   *io.PipeReader
	pw   *io.PipeWriter
	done chan struct{}
}

func newJSONHostWriter(w io.Writer, host string, mu *sync.Mutex, text func(string) string) *jsonHostWriter {
	pr, pw := io.Pipe()
	j := &jsonHostWriter{w: w, text: text, host: host, mu: mu, pr: pr, pw: pw, done: make(chan struct{})}
	go func() {
		defer close(j.done)
		dec := json.NewDecoder(bufio.NewReader(pr))
		for {
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				if err != io.EOF {
					// Not JSON after all: pass the rest through as text.
					j.mu.Lock()
					tw := &textWriter{w: j.w, text: j.text}
					io.Copy(tw, io.MultiReader(dec.Buffered(), pr))
					tw.Close()
					j.mu.Unlock()
				}
				pr.Close()
				return
			}
			out := withHost(v, host)
			if len(v) > 0 && v[0] == '[' {
				var arr []json.RawMessage
				if json.Unmarshal(v, &arr) == nil {
					for i := range arr {
						arr[i] = withHost(arr[i], host)
					}
					var b bytes.Buffer
					writeJSON(&b, arr)
					j.mu.Lock()
					j.w.Write(b.Bytes())
					j.mu.Unlock()
					continue
				}
			}
			// Keep the shape: an indented document stays indented, an NDJSON
			// line stays one line.
			b := append(compactJSON(out), '\n')
			if bytes.ContainsRune(v, '\n') {
				var ind bytes.Buffer
				if json.Indent(&ind, out, "", "  ") == nil {
					b = append(ind.Bytes(), '\n')
				}
			}
			j.mu.Lock()
			j.w.Write(b)
			j.mu.Unlock()
		}
	}()
	return j
}

func (j *jsonHostWriter) Write(p []byte) (int, error) { return j.pw.Write(p) }

// Close flushes what is left and waits for it to be written.
func (j *jsonHostWriter) Close() { j.pw.Close(); <-j.done }

// prefixWriter writes each complete line with a prefix (the text lines of a
// wait across hosts: "host:" before the id).
type prefixWriter struct {
	w      io.Writer
	prefix string
	mu     *sync.Mutex
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		p.mu.Lock()
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i])
		p.mu.Unlock()
		p.buf = p.buf[i+1:]
	}
}

func (p *prefixWriter) Close() {
	if len(p.buf) > 0 {
		p.mu.Lock()
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf)
		p.mu.Unlock()
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// textWriter passes a host's text output through the caller's sanitiser
// (Streams.Text) as it streams: a remote's stdout reaches the terminal only
// as its stderr does, made safe. It holds back only the bytes of a character
// that a write cut in two.
type textWriter struct {
	w    io.Writer
	text func(string) string
	buf  []byte
}

func (t *textWriter) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	n := completeUTF8(t.buf)
	if n == 0 {
		return len(p), nil
	}
	_, err := io.WriteString(t.w, t.safe(string(t.buf[:n])))
	t.buf = append(t.buf[:0], t.buf[n:]...)
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close writes what was held back.
func (t *textWriter) Close() {
	if len(t.buf) > 0 {
		io.WriteString(t.w, t.safe(string(t.buf)))
		t.buf = nil
	}
}

func (t *textWriter) safe(s string) string {
	if t.text == nil {
		return s
	}
	return t.text(s)
}

// completeUTF8 is the length of b without a UTF-8 sequence cut short at its end.
func completeUTF8(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}
