package gemini

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkDiscover lists 500 sessions of 20 turns each, in 10 projects.
func BenchmarkDiscover(b *testing.B) {
	home := b.TempDir()
	t := &testing.T{}
	for i := 0; i < 500; i++ {
		id := fmt.Sprintf("%08x-2222-4333-8444-555555555555", i)
		lines := []string{header(id, "2026-12-01T10:00:00.000Z"), setMessages("2026-12-01T10:00:00.001Z", ctxMsg)}
		for j := 0; j < 20; j++ {
			ts := fmt.Sprintf("2026-12-01T10:%02d:00.000Z", j)
			lines = append(lines, userMsg(fmt.Sprintf("u%d", j), ts, "do the thing"), lastUpdated(ts),
				geminiMsg(fmt.Sprintf("g%d", j), ts, "done", tok1, "gemini-2.5-flash"), lastUpdated(ts))
		}
		p := fmt.Sprintf("p%d", i%10)
		writeSession(t, home, p, "/w/"+p, fmt.Sprintf("session-2026-12-01T10-00-%08x.jsonl", i), lines...)
	}
	env, _ := testEnv(t, home, nil)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ss, err := New().Discover(context.Background(), env)
		if err != nil || len(ss) != 500 {
			b.Fatalf("%d sessions, %v", len(ss), err)
		}
	}
}
