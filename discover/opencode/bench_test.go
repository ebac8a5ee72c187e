package opencode

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/e2e/synth"
)

// BenchmarkLargeStore lists and peeks a generated store of 3,000 sessions (~35k
// messages, ~125k parts, ~200 MB): the listing must stay well under 0.5 s, which
// holds only because it aggregates in SQL and never reads parts in bulk.
//
//	go test ./discover/opencode -run '^$' -bench LargeStore -benchtime 20x
func BenchmarkLargeStore(b *testing.B) {
	home := b.TempDir()
	path := filepath.Join(home, ".local", "share", "opencode", "opencode.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := synth.WriteOpenCodeDB(path, 3000, 1); err != nil {
		b.Fatal(err)
	}
	env := newEnv(home, nil, table(ocRun(500, "/home/dev/frontend", 1795211000000)))
	a := testAdapter()
	var sessions []discover.Session
	b.Run("discover", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ss, err := a.Discover(context.Background(), env)
			if err != nil || len(ss) != 3000 {
				b.Fatalf("%d sessions, err %v", len(ss), err)
			}
			sessions = ss
		}
	})
	b.Run("peek20", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s := sessions[i%len(sessions)]
			if _, err := a.Peek(context.Background(), env, s, 20); err != nil && err != discover.ErrNoSession {
				b.Fatal(err)
			}
		}
	})
}
