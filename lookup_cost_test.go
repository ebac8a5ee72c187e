package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/e2e/synth"
	"github.com/agentctl/agentctl/internal/agentfs"
	"github.com/agentctl/agentctl/proc"
)

// legacyHome writes n sessions per agent in the layouts whose lookups used to
// read everything: Claude Code, Codex rollouts without a state db, OpenCode's
// legacy storage/ tree, Pi and pi-rust; and the newer agents' (Gemini CLI,
// Qwen Code, Copilot CLI).
func legacyHome(t *testing.T, n int) string {
	t.Helper()
	home := t.TempDir()
	if err := synth.WriteClaudeHome(home, n, 2<<10, 8<<10, 1); err != nil {
		t.Fatal(err)
	}
	if err := synth.WriteCodexHome(home, n, 3); err != nil {
		t.Fatal(err)
	}
	dbs, _ := filepath.Glob(filepath.Join(home, ".codex", "*.sqlite*"))
	for _, p := range dbs {
		os.Remove(p)
	}
	if err := synth.WriteOpenCodeLegacy(filepath.Join(home, ".local", "share", "opencode", "storage"), n, 4); err != nil {
		t.Fatal(err)
	}
	if err := synth.WritePiHome(home, n, 5); err != nil {
		t.Fatal(err)
	}
	if err := synth.WriteGeminiHome(home, n, 6); err != nil {
		t.Fatal(err)
	}
	if err := synth.WriteQwenHome(home, n, 7); err != nil {
		t.Fatal(err)
	}
	if err := synth.WriteCopilotHome(home, n, 8); err != nil {
		t.Fatal(err)
	}
	return home
}

// ownFiles is every name a session's own files carry: its id, and for a legacy
// OpenCode session its message ids (part/<msg>/ holds a message's parts).
func ownFiles(s discover.Session) []string {
	own := []string{s.ID}
	if s.Adapter == "pi-rust" {
		own = append(own, "_"+s.ID[:8]+".jsonl") // pi-rust names its file by the id's first 8 characters
	}
	if s.Adapter == "gemini" {
		own = append(own, "-"+s.ID[:8]+".jsonl") // session-<time>-<8 characters of the id>.jsonl
	}
	if s.Adapter == "opencode" {
		storage := filepath.Dir(filepath.Dir(filepath.Dir(s.Path)))
		names, _ := os.ReadDir(filepath.Join(storage, "message", s.ID))
		for _, e := range names {
			own = append(own, strings.TrimSuffix(e.Name(), ".json"))
		}
	}
	return own
}

// dataOwner names the adapter whose data a path is under.
func dataOwner(home, p string) string {
	rel, _ := filepath.Rel(home, p)
	switch {
	case strings.HasPrefix(rel, ".claude/"):
		return "claude-code"
	case strings.HasPrefix(rel, ".codex/"):
		return "codex"
	case strings.HasPrefix(rel, ".local/share/opencode/"):
		return "opencode"
	case strings.HasPrefix(rel, ".pi/"):
		return "pi"
	case strings.HasPrefix(rel, ".gemini/"):
		return "gemini"
	case strings.HasPrefix(rel, ".qwen/"):
		return "qwen-code"
	case strings.HasPrefix(rel, ".copilot/"):
		return "copilot"
	}
	return "other"
}

// TestLookupOpensO1Files: resolving one session's id (status, peek, stop, …)
// on homes of 8 and 80 sessions per agent (-short: 4 and 24), every layout, cold and warm parse
// index, opens that session's own files and at most a few others per adapter,
// the same number whatever the history's size; and finds exactly what the full
// listing has for that id and its prefixes (the same sessions, fields,
// ambiguity answers).
func TestLookupOpensO1Files(t *testing.T) {
	others := map[int]map[string]int{} // per home size, per adapter: most files opened beyond the target's own
	indexRead := map[int]int{}         // per home size: most parse index bytes a warm lookup read
	small, big := 8, 80
	if testing.Short() {
		small, big = 4, 24 // writing the legacy OpenCode tree costs seconds per hundred sessions
	}
	for _, n := range []int{small, big} {
		t0 := time.Now()
		home := legacyHome(t, n)
		t.Logf("n=%d: home generated in %s", n, time.Since(t0).Round(time.Millisecond))
		env := &discover.Env{Home: home, Getenv: func(string) string { return "" }, Procs: &proc.Fake{Boot: "boot-1"},
			Now: time.Now, StateDir: t.TempDir()}
		adapters := allAdapters()
		full := discover.All(context.Background(), env, adapters, time.Minute)
		per := map[string][]discover.Session{}
		for _, s := range full.Sessions {
			a := s.Adapter
			if a == "pi-rust" {
				a = "pi"
			}
			per[a] = append(per[a], s)
		}
		for _, a := range []string{"claude-code", "codex", "opencode", "pi", "gemini", "qwen-code", "copilot"} {
			if len(per[a]) < n*9/10 {
				t.Fatalf("n=%d: the full listing has %d %s sessions", n, len(per[a]), a)
			}
		}
		others[n] = map[string]int{}
		for _, cold := range []bool{true, false} {
			for a, ss := range per {
				// The first, a middle and the last session of each adapter, and
				// every pi-rust one (their file names carry only 8 characters of the id).
				targets := []discover.Session{ss[0], ss[len(ss)/2], ss[len(ss)-1]}
				for _, s := range ss {
					if s.Adapter == "pi-rust" {
						targets = append(targets, s)
					}
				}
				for _, target := range targets {
					lenv := *env
					if cold {
						lenv.StateDir = t.TempDir()
					}
					var mu sync.Mutex
					var opened []string
					ixBytes := 0
					restore := agentfs.SetHook(func(p string) { mu.Lock(); opened = append(opened, p); mu.Unlock() })
					restoreRead := agentfs.SetReadHook(func(_ string, k int) { mu.Lock(); ixBytes += k; mu.Unlock() })
					res := discover.FindAll(context.Background(), &lenv, adapters, time.Minute, discover.QueryFor(target.ID, nil))
					restore()
					restoreRead()
					if !cold {
						indexRead[n] = max(indexRead[n], ixBytes)
					}
					got, err := discover.Resolve(res.Sessions, target.ID)
					if err != nil {
						t.Fatalf("n=%d %s %s: %v", n, a, target.ID, err)
					}
					if diff := cmp.Diff(target, got); diff != "" {
						t.Errorf("n=%d cold=%v %s: (-listing +lookup):\n%s", n, cold, target.ID, diff)
					}
					own := ownFiles(target)
					count := map[string]int{}
					for _, p := range opened {
						if strings.HasPrefix(p, lenv.StateDir) {
							continue // agentctl's own parse index: counted in bytes (indexRead)
						}
						mine := false
						for _, o := range own {
							mine = mine || strings.Contains(p, o)
						}
						if !mine && cold && a == "claude-code" && dataOwner(home, p) == "claude-code" {
							// Without the index, whether the session is a fork of another
							// (extra.tokens_inherited) needs the first request of the other
							// transcripts of its project bucket (docs/agents/claude-code.md
							// §3.1, discover/claude/fork.go): never outside that bucket.
							if filepath.Dir(p) != filepath.Dir(target.Path) {
								t.Errorf("n=%d: cold status %s opened %s, outside its bucket", n, target.ID, p)
							}
							continue
						}
						if !mine {
							count[dataOwner(home, p)]++
						}
					}
					for ad, c := range count {
						if c > others[n][ad] {
							others[n][ad] = c
						}
						if c > 2 {
							var list []string
							for _, p := range opened {
								if dataOwner(home, p) == ad {
									list = append(list, p)
								}
							}
							sort.Strings(list)
							t.Errorf("n=%d cold=%v: status %s (%s) opened %d files of %s beyond its own:\n%s", n, cold, target.ID, a, c, ad, strings.Join(list[:min(len(list), 20)], "\n"))
						}
					}
				}
				// Prefixes: the same sessions, or the same ambiguity answer, as
				// resolving over the full listing.
				for _, target := range targets {
					if cold {
						break
					}
					for _, k := range []int{1, 2, 5, 9, len(target.ID) - 1} {
						arg := target.ID[:k]
						if discover.CheckID(arg) != nil {
							continue
						}
						want, wantErr := discover.Resolve(full.Sessions, arg)
						got, gotErr := discover.Resolve(discover.FindAll(context.Background(), env, adapters, time.Minute, discover.QueryFor(arg, nil)).Sessions, arg)
						if diff := cmp.Diff(want, got); diff != "" {
							t.Errorf("n=%d %q: (-listing +lookup):\n%s", n, arg, diff)
						}
						var wa, ga *discover.AmbiguousError
						if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) || (errors.As(wantErr, &wa) && errors.As(gotErr, &ga) && !cmp.Equal(wa.Candidates, ga.Candidates)) {
							t.Errorf("n=%d %q: lookup says %v, the listing %v", n, arg, gotErr, wantErr)
						}
					}
				}
			}
		}
	}
	// A lookup reads the index entries of its session (and of its fork
	// relatives), never a whole index: the same bytes at either size.
	t.Logf("parse index bytes read by a warm lookup, most: %v", indexRead)
	if indexRead[big] > indexRead[small]*5/4+2048 {
		t.Errorf("a warm lookup read up to %d parse index bytes on a home of %d sessions per agent, %d on %d", indexRead[big], big, indexRead[small], small)
	}
	if diff := cmp.Diff(others[small], others[big]); diff != "" {
		t.Errorf("files opened beyond the session's own grow with the history (-%d sessions +%d):\n%s", small, big, diff)
	}
}

// TestCacheDeletionChangesNoOutput: on the legacy layouts, every reading
// command prints the same with a cold parse index, a warm one, and after
// cache/ is deleted: list (alive only and -a), status and peek of one session
// per agent, and an ambiguous prefix.
func TestCacheDeletionChangesNoOutput(t *testing.T) {
	home := legacyHome(t, 14) // the 14th Pi session is pi-rust
	state := filepath.Join(t.TempDir(), "state")
	env := map[string]string{"HOME": home, "AGENTCTL_HOME": state, "USER": "tester"}
	g := globalOptions{Home: home, Timeout: "1m"}
	run := func(f func(context.Context, *host) error) string {
		var out, errOut strings.Builder
		h := &host{IOStreams: &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
			getenv:     func(k string) string { return env[k] },
			now:        time.Now,
			executable: func() (string, error) { return "", errors.New("no agentctl executable in tests") }}
		err := f(context.Background(), h)
		return fmt.Sprintf("exit %d\n%s\n%s", codeOf(err), out.String(), errOut.String())
	}
	ids := map[string]string{}
	var listed []struct {
		ID, Adapter string
	}
	outAll := run(func(ctx context.Context, h *host) error {
		return runList(ctx, h, listOptions{globalOptions: g, All: true, JSON: true, Since: "36500d"})
	})
	if err := jsonFrom(outAll, &listed); err != nil {
		t.Fatalf("list -a --json: %v\n%s", err, outAll)
	}
	for _, s := range listed {
		if ids[s.Adapter] == "" {
			ids[s.Adapter] = s.ID
		}
	}
	if len(ids) < 8 { // claude-code, codex, opencode, pi, pi-rust, gemini, qwen-code, copilot
		t.Fatalf("listed adapters %v", ids)
	}
	commands := map[string]func(context.Context, *host) error{
		"list -a --json": func(ctx context.Context, h *host) error {
			return runList(ctx, h, listOptions{globalOptions: g, All: true, JSON: true, Since: "36500d"})
		},
		"list": func(ctx context.Context, h *host) error { return runList(ctx, h, listOptions{globalOptions: g}) },
		"status ambiguous": func(ctx context.Context, h *host) error {
			return runStatus(ctx, h, statusOptions{globalOptions: g, Args: []string{"0"}})
		},
	}
	for a, id := range ids {
		commands["status "+a] = func(ctx context.Context, h *host) error {
			return runStatus(ctx, h, statusOptions{globalOptions: g, Args: []string{id}, JSON: true})
		}
		commands["peek "+a] = func(ctx context.Context, h *host) error {
			return runPeek(ctx, h, peekOptions{globalOptions: g, Command: "peek", Args: []string{id}, N: 5, JSON: true})
		}
	}
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	outputs := func() map[string]string {
		m := map[string]string{}
		for _, n := range names {
			m[n] = run(commands[n])
		}
		return m
	}
	if err := os.RemoveAll(filepath.Join(state, "cache")); err != nil {
		t.Fatal(err)
	}
	cold := outputs()
	warm := outputs()
	if ents, _ := os.ReadDir(filepath.Join(state, "cache")); len(ents) == 0 {
		t.Fatal("no parse index was written")
	}
	// Index files as large as a history of ~30,000 sessions make the listing
	// large (discover.LargeListing): packed, one adapter at a time.
	pad := filepath.Join(state, "cache", "padding.index")
	if err := os.WriteFile(pad, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(pad, discover.LargeFrom); err != nil {
		t.Fatal(err)
	}
	if !discover.LargeListing(&discover.Env{StateDir: state}) {
		t.Fatal("the padded cache does not make the listing large")
	}
	large := outputs()
	if err := os.RemoveAll(filepath.Join(state, "cache")); err != nil {
		t.Fatal(err)
	}
	deleted := outputs()
	for _, n := range names {
		if diff := cmp.Diff(warm[n], cold[n]); diff != "" {
			t.Errorf("%s (-warm +cold):\n%s", n, diff)
		}
		if diff := cmp.Diff(warm[n], large[n]); diff != "" {
			t.Errorf("%s (-warm +large listing):\n%s", n, diff)
		}
		if diff := cmp.Diff(warm[n], deleted[n]); diff != "" {
			t.Errorf("%s (-warm +cache deleted):\n%s", n, diff)
		}
	}
}

// jsonFrom decodes the JSON array after the "exit N" line of run's output.
func jsonFrom(out string, v any) error {
	i := strings.IndexByte(out, '[')
	j := strings.LastIndexByte(out, ']')
	if i < 0 || j < i {
		return errors.New("no JSON array")
	}
	return json.Unmarshal([]byte(out[i:j+1]), v)
}
