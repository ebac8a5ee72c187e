package opencode

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLegacyStore: one session of the legacy storage/ tree whose session file,
// one message file and one part file are the fuzzer's bytes. Listing and peeking
// must not panic or hang, and any session listed must carry sane numbers.
func FuzzLegacyStore(f *testing.F) {
	seed := func(rel string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "legacy", "storage", rel))
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	f.Add(seed("session/global/"+legacyOnly+".json"),
		seed("message/"+legacyOnly+"/msg_0e9a1b2c4001BBBBBBBBBBBBBB.json"),
		seed("part/msg_0e9a1b2c4001BBBBBBBBBBBBBB/prt_0e9a1b2c4002BBBBBBBBBBBBBB.json"))
	f.Add([]byte(`{"id":"`+legacyOnly+`","time":{"created":-1e300,"updated":"x"}}`),
		[]byte(`{"id":"msg_a","role":"assistant","tokens":{"input":-5,"output":1e30,"cache":{"read":"NaN"}},"cost":-3}`),
		[]byte(`{"type":"tool","tool":"bash","state":{"input":{"command":"\u001b]0;x\u0007"}}}`))
	f.Add([]byte(`{`), []byte(`[]`), []byte(`null`))
	f.Fuzz(func(t *testing.T, session, message, part []byte) {
		home := t.TempDir()
		storage := filepath.Join(home, ".local", "share", "opencode", "storage")
		write := func(rel string, b []byte) {
			p := filepath.Join(storage, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		write("session/global/"+legacyOnly+".json", session)
		write("message/"+legacyOnly+"/msg_0e9a1b2c4001BBBBBBBBBBBBBB.json", message)
		write("part/msg_0e9a1b2c4001BBBBBBBBBBBBBB/prt_0e9a1b2c4002BBBBBBBBBBBBBB.json", part)
		env := newEnv(home, nil, noProcs()).WithWarn(func(string) {})
		ss, err := testAdapter().Discover(context.Background(), env)
		if err != nil {
			return // an unreadable store is an adapter error, reported as a warning upstream
		}
		for _, s := range ss {
			if tk := s.Tokens; tk != nil && (tk.Input < 0 || tk.Output < 0 || tk.CacheRead < 0 || tk.CacheWrite < 0) {
				t.Errorf("%s: negative tokens %+v", s.ID, *tk)
			}
			if c := s.CostUSD; c != nil && !(*c >= 0 && *c < 1e12) {
				t.Errorf("%s: cost %v", s.ID, *c)
			}
			if _, err := testAdapter().Peek(context.Background(), env, s, 20); err != nil {
				continue
			}
		}
	})
}
