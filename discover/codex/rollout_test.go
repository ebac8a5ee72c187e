package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/discovertest"
	"github.com/agentctl/agentctl/discover/index"
)

func readLinesOf(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
}

// legacyHome is a HOME whose .codex/sessions holds the hand-written legacy
// rollouts of testdata/legacy (no state DB).
func legacyHome(t testing.TB) string {
	home := t.TempDir()
	discovertest.CopyTree(t, "testdata/legacy", filepath.Join(home, ".codex", "sessions", "2025", "09", "01"))
	return home
}

func peekAll(t testing.TB, home, id string, n int) []discover.Message {
	t.Helper()
	env := testEnv(home, nil, nil)
	msgs, err := testAdapter(nil).Peek(context.Background(), env, discover.Session{ID: id}, n)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// docs/agents/codex.md pitfall 17: a last line without '\n' is being written; it is ignored
// by list and peek and causes no error.
func TestPartialLastLine(t *testing.T) {
	home := fixtureHome(t)
	p := rolloutPath(t, home, id5425)
	discovertest.AppendFile(t, p, `{"timestamp":"2026-11-20T23:00:00.000Z","ordinal":14,"type":"event_msg","payload":{"type":"task_sta`)
	s := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))[id5425]
	if s.Status != discover.StatusStopped || s.Extra["reason"] != "done" || !s.LastActivity.Equal(ts("2026-11-20T21:50:16.743Z")) {
		t.Errorf("%s/%v last activity %v", s.Status, s.Extra["reason"], s.LastActivity)
	}
	if got := kinds(peekAll(t, home, id5425, 0)); got != "user,assistant,system" {
		t.Errorf("peek kinds %s", got)
	}
}

// Unknown types, unknown payload types, unknown item types and lines that do not
// parse are skipped silently, wherever they are.
func TestUnknownRecordsSkipped(t *testing.T) {
	home := fixtureHome(t)
	p := rolloutPath(t, home, id1023)
	lines := readLinesOf(t, p)
	junk := []string{
		`{"timestamp":"2026-11-20T21:44:31.600Z","ordinal":900,"type":"future_record","payload":{"x":1}}`,
		`{"timestamp":"2026-11-20T21:44:31.600Z","ordinal":901,"type":"event_msg","payload":{"type":"brand_new_event","message":{"nested":true}}}`,
		`{"timestamp":"2026-11-20T21:44:31.600Z","ordinal":902,"type":"event_msg","payload":{"type":"item_completed","item":{"type":"HologramItem","content":7}}}`,
		`{"timestamp":"2026-11-20T21:44:31.600Z","type":"response_item","payload":{"type":"ghost_snapshot","ghost_commit":{}}}`,
		`not json at all {"type":"event_msg"`,
		`[1,2,3]`,
	}
	var out []string
	out = append(out, lines[0])
	out = append(out, junk...)
	out = append(out, lines[1:]...)
	out = append(out, junk[:5]...)
	discovertest.WriteLines(t, p, out...)

	s := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))[id1023]
	if s.Status != discover.StatusStopped || s.Extra["reason"] != "interrupted" || s.Tokens == nil || s.Tokens.Input != 126 {
		t.Errorf("%s/%v tokens %+v (%s)", s.Status, s.Extra["reason"], s.Tokens, s.EvidenceDetail)
	}
	msgs := peekAll(t, home, id1023, 0)
	if diff := cmp.Diff(facts[0].prompts, texts(msgs, "user")); diff != "" {
		t.Errorf("prompts (-want +got):\n%s", diff)
	}
	os.Remove(filepath.Join(codexDir(home), "state_5.sqlite"))
	s = discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))[id1023]
	if s.Prompt != "Say hello slowly" || s.Cwd != "/home/dev" {
		t.Errorf("rollout-only: prompt %q cwd %q", s.Prompt, s.Cwd)
	}
}

// docs/agents/codex.md pitfall 1: 0.169 writes no user_message/agent_message, yet prompt and
// peek are not empty. Pitfall 3: the reply exists twice (AgentMessage and the
// response_item) and is shown once. Pitfall 4: the first response_item with role
// user is <environment_context>, not the prompt.
func TestPaginatedFormat(t *testing.T) {
	home := fixtureHome(t)
	os.Remove(filepath.Join(codexDir(home), "state_5.sqlite"))
	got := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))
	if p := got[id5425].Prompt; p != "prefix test" {
		t.Errorf("prompt %q", p)
	}
	if p := got[id1023].Prompt; p != "Say hello slowly" {
		t.Errorf("first prompt %q", p)
	}
	msgs := peekAll(t, home, id5425, 0)
	if diff := cmp.Diff([]string{"Hello from the fake server."}, texts(msgs, "assistant")); diff != "" {
		t.Errorf("assistant (-want +got):\n%s", diff)
	}
	// Raw holds the native line the item came from.
	if len(msgs[0].Raw) != 1 || !bytes.Contains(msgs[0].Raw[0], []byte(`"type":"UserMessage"`)) || msgs[0].MessageID == "" {
		t.Errorf("user raw %s id %q", msgs[0].Raw, msgs[0].MessageID)
	}
	if msgs[2].Kind != "system" || msgs[2].Text != "turn done (0.1s)" {
		t.Errorf("turn end %+v", msgs[2])
	}
}

// docs/agents/codex.md pitfall 5: total_token_usage is cumulative — after two turns input is
// 84, not 42 + 84.
func TestTokensCumulative(t *testing.T) {
	home := fixtureHome(t)
	p := rolloutPath(t, home, id1023)
	discovertest.WriteLines(t, p, readLinesOf(t, p)[:24]...) // through the second task_complete
	os.Remove(filepath.Join(codexDir(home), "state_5.sqlite"))
	s := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))[id1023]
	want := &discover.Tokens{Input: 84, Output: 14}
	if diff := cmp.Diff(want, s.Tokens); diff != "" || s.Extra["tokens_total"] != int64(98) {
		t.Errorf("tokens (-want +got):\n%s total %v", diff, s.Extra["tokens_total"])
	}
}

// The legacy history mode (user_message/agent_message events, shell tool calls
// with JSON outputs, no task markers) and docs/agents/codex.md pitfall 6: input_tokens
// includes cached ones.
func TestLegacyRollout(t *testing.T) {
	home := legacyHome(t)
	const id = "0199a000-0000-7000-8000-000000000001"
	s := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))[id]
	if s.Prompt != "list the files" || s.Cwd != "/home/dev/legacy" || s.Model != "gpt-5" || s.GitBranch != "main" || s.AgentVersion != "0.34.0" {
		t.Errorf("prompt %q cwd %q model %q branch %q version %q", s.Prompt, s.Cwd, s.Model, s.GitBranch, s.AgentVersion)
	}
	// cached 30 of 42 → input 12, cache_read 30; reasoning is display-only.
	if diff := cmp.Diff(&discover.Tokens{Input: 12, Output: 7, CacheRead: 30}, s.Tokens); diff != "" {
		t.Errorf("tokens (-want +got):\n%s", diff)
	}
	if s.Extra["tokens_reasoning"] != int64(2) {
		t.Errorf("reasoning %v", s.Extra["tokens_reasoning"])
	}
	// No task markers: the agent answered after the last prompt, so the turn ended.
	if s.Status != discover.StatusStopped || s.Extra["reason"] != "done" {
		t.Errorf("%s/%v (%s)", s.Status, s.Extra["reason"], s.EvidenceDetail)
	}
	msgs := peekAll(t, home, id, 0)
	if got := kinds(msgs); got != "user,assistant,assistant" {
		t.Fatalf("kinds %s", got)
	}
	want := []discover.ToolCall{
		{ID: "call_1", Name: "shell", Summary: "ls", HasResult: true, Result: "README.md"},
		{ID: "call_2", Name: "shell", Summary: "cat missing", HasResult: true, Result: "cat: missing: No such file or directory", IsError: true},
	}
	if diff := cmp.Diff(want, msgs[1].Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if len(msgs[1].Raw) != 4 || msgs[2].Text != "There are two files: README.md and main.go." {
		t.Errorf("raw lines %d, text %q", len(msgs[1].Raw), msgs[2].Text)
	}
}

// docs/agents/codex.md pitfall 2: a thread resumed across an upgrade holds a legacy turn and
// a paginated one; both are rendered, each once.
func TestMixedLegacyPaginated(t *testing.T) {
	home := legacyHome(t)
	const id = "0199a001-0000-7000-8000-000000000002"
	msgs := peekAll(t, home, id, 0)
	var got []string
	for _, m := range msgs {
		got = append(got, m.Kind+": "+m.Text)
	}
	want := []string{"user: first legacy prompt", "assistant: legacy reply", "user: second paginated prompt", "assistant: paginated reply", "system: turn done (3.0s)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("peek (-want +got):\n%s", diff)
	}
	s := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))[id]
	if s.Prompt != "first legacy prompt" || s.Model != "gpt-6" || s.Tokens == nil || s.Tokens.Input != 84 || s.Extra["reason"] != "done" {
		t.Errorf("prompt %q model %q tokens %+v reason %v", s.Prompt, s.Model, s.Tokens, s.Extra["reason"])
	}
}

// Rollouts from before the envelope: a bare meta line and bare response items.
func TestPreEnvelopeRollout(t *testing.T) {
	home := legacyHome(t)
	const id = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
	s := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))[id]
	if s.Prompt != "hello old codex" || s.StartedAt == nil || !s.StartedAt.Equal(ts("2025-05-01T12:00:00Z")) || s.Status != discover.StatusStopped {
		t.Errorf("prompt %q started %v status %s", s.Prompt, s.StartedAt, s.Status)
	}
	msgs := peekAll(t, home, id, 0)
	if got := kinds(msgs); got != "user,assistant" || msgs[1].Text != "hi there" {
		t.Errorf("kinds %s %+v", got, msgs)
	}
}

// docs/agents/codex.md pitfall 16: single lines of many MB (tool output) parse, in list and
// peek, including when the tail scan has to cross one.
func TestHugeLines(t *testing.T) {
	home := fixtureHome(t)
	p := rolloutPath(t, home, id5425)
	lines := readLinesOf(t, p)
	big := strings.Repeat("x", 5<<20)
	out := append([]string{}, lines...)
	out = append(out,
		`{"timestamp":"2026-11-20T22:00:00.000Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t2"}}`,
		`{"timestamp":"2026-11-20T22:00:00.100Z","type":"event_msg","payload":{"type":"item_completed","turn_id":"t2","item":{"type":"UserMessage","id":"u2","content":[{"type":"text","text":"dump it"}]}}}`,
		`{"timestamp":"2026-11-20T22:00:01.000Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"cat big.log\"}","call_id":"c9"}}`,
		`{"timestamp":"2026-11-20T22:00:02.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c9","output":"Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\nfirst line of big\n`+big+`"}}`,
	)
	discovertest.WriteLines(t, p, out...)
	s := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))[id5425]
	// The killed second turn is open; tokens come from the first turn's count.
	if s.Status != discover.StatusFailed || s.Extra["reason"] != "crashed" || s.Tokens == nil || s.Tokens.Input != 42 {
		t.Errorf("%s/%v tokens %+v", s.Status, s.Extra["reason"], s.Tokens)
	}
	msgs := peekAll(t, home, id5425, 2)
	if got := kinds(msgs); got != "user,assistant" {
		t.Fatalf("kinds %s", got)
	}
	want := []discover.ToolCall{{ID: "c9", Name: "exec_command", Summary: "cat big.log", HasResult: true, Result: "first line of big"}}
	if diff := cmp.Diff(want, msgs[1].Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

// -n counts messages (user, assistant with its tools, errors, turn markers), from
// the end, oldest first.
func TestPeekN(t *testing.T) {
	home := fixtureHome(t)
	msgs := peekAll(t, home, id1023, 2)
	if len(msgs) != 2 || msgs[0].Text != "resume from other cwd" || msgs[1].Text != "turn interrupted" {
		t.Errorf("n=2: %+v", msgs)
	}
	if all := peekAll(t, home, id1023, 0); len(all) != 11 {
		t.Errorf("n=0: %d messages, want 11 (4 prompts, 3 replies, 4 turn ends)", len(all))
	}
	// A long thread: the backward window has to grow to find n items.
	padRollout(t, rolloutPath(t, home, id1023), 24, 12, 200<<10, "2026-11-20T21:50:17.200Z")
	msgs = peekAll(t, home, id1023, 6)
	// The first of the six is before 2.4 MB of filler.
	want := []string{"turn done (0.1s)", "resume via devnull", "Hello from the fake server.", "turn done (0.1s)", "resume from other cwd", "turn interrupted"}
	if diff := cmp.Diff(want, textsAll(msgs)); diff != "" {
		t.Errorf("n=6 across 2.4 MB (-want +got):\n%s", diff)
	}
}

func textsAll(msgs []discover.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return out
}

// An error event in the latest turn is shown in peek and, with nobody writing,
// makes the thread failed.
func TestErrorEvent(t *testing.T) {
	home := fixtureHome(t)
	p := rolloutPath(t, home, id861e)
	discovertest.AppendFile(t, p, `{"timestamp":"2026-11-20T21:45:05.000Z","type":"event_msg","payload":{"type":"error","message":"unexpected status 401 Unauthorized"}}`+"\n")
	s := discovertest.DiscoverAll(t, testAdapter(nil), testEnv(home, nil, nil))[id861e]
	if s.Status != discover.StatusFailed || s.Extra["reason"] != "error" || !strings.Contains(s.EvidenceDetail, "401") {
		t.Errorf("%s/%v (%s)", s.Status, s.Extra["reason"], s.EvidenceDetail)
	}
	msgs := peekAll(t, home, id861e, 1)
	if len(msgs) != 1 || msgs[0].Kind != "error" || !msgs[0].IsError || msgs[0].Text != "unexpected status 401 Unauthorized" {
		t.Errorf("%+v", msgs)
	}
}

// A launched thread without a rollout yet is peeked from its launch log.
func TestPeekLaunchLog(t *testing.T) {
	home := fixtureHome(t)
	log := filepath.Join(t.TempDir(), "stdout.jsonl")
	discovertest.CopyTree(t, "testdata/captures", filepath.Dir(log))
	os.Rename(filepath.Join(filepath.Dir(log), "exec-json.stdout.jsonl"), log)
	env := testEnv(home, nil, nil)
	msgs, err := testAdapter(nil).Peek(context.Background(), env, discover.Session{ID: "01a1faea-19e4-7f11-a97a-99c16461e631", Log: log}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, m.Kind+": "+discover.Truncate(m.Text, 40))
	}
	want := []string{"system: warning: Model metadata for `fake-model`", "assistant: Hello from the fake server.", "system: turn done"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := testAdapter(nil).Peek(context.Background(), env, discover.Session{ID: "01a1ffff-0000-7000-8000-000000000000"}, 0); err != discover.ErrNoSession {
		t.Errorf("unknown thread: %v", err)
	}
}

// scanBackward delivers exactly the complete lines, last first, for any chunk
// size and line length mix, skipping a trailing partial line.
func TestScanBackward(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	sc := &scratch{} // shared across files, as a worker does
	for iter := 0; iter < 200; iter++ {
		var b bytes.Buffer
		var want []string
		n := rng.Intn(30)
		for i := 0; i < n; i++ {
			l := fmt.Sprintf("%d:%s", i, strings.Repeat("a", rng.Intn(3000)))
			if rng.Intn(10) == 0 {
				l += "\r"
			}
			b.WriteString(l + "\n")
			want = append(want, strings.TrimSuffix(l, "\r"))
		}
		if rng.Intn(2) == 0 {
			b.WriteString("partial-" + strings.Repeat("z", rng.Intn(5000)))
		}
		var got []string
		atStart, err := scanBackward(bytes.NewReader(b.Bytes()), int64(b.Len()), 1+rng.Intn(4096), 1<<30, sc, func(line []byte, off int64) bool {
			if !bytes.HasPrefix(b.Bytes()[off:], line) {
				t.Fatalf("offset %d does not start %q", off, line[:5])
			}
			got = append([]string{string(line)}, got...)
			return true
		})
		if err != nil || !atStart {
			t.Fatalf("err %v atStart %v", err, atStart)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("iter %d (-want +got):\n%s", iter, diff)
		}
		// Forward, the same lines in order (the head reader).
		var fwd []string
		err = scanForward(bytes.NewReader(b.Bytes()), int64(b.Len()), 1<<30, sc, func(line []byte, off int64) bool {
			if !bytes.HasPrefix(b.Bytes()[off:], line) {
				t.Fatalf("forward offset %d does not start %q", off, line[:5])
			}
			fwd = append(fwd, string(line))
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, fwd); diff != "" {
			t.Fatalf("forward iter %d (-want +got):\n%s", iter, diff)
		}
	}
}

// Lines longer than the reads, ending exactly where a read starts or one byte
// either side: the backward scan reads at least what it carries and searches
// only the bytes it just read, so a line end at a read's edge must still be
// found, and each line delivered whole at its offset.
func TestScanBackwardLongLines(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	sc := &scratch{}
	for iter := 0; iter < 300; iter++ {
		first := 1 + rng.Intn(16)
		var b bytes.Buffer
		var want []string
		var offs []int64
		for i := rng.Intn(12); i >= 0; i-- {
			n := rng.Intn(20000)
			if rng.Intn(2) == 0 { // a length near a read size: first·4^k, ±1
				n = first << (2 * rng.Intn(7))
				n += rng.Intn(3) - 1
			}
			l := strings.Repeat(string(rune('a'+i%26)), max(n, 1))
			offs = append(offs, int64(b.Len()))
			b.WriteString(l + "\n")
			want = append(want, l)
		}
		var got []string
		var gotOffs []int64
		atStart, err := scanBackward(bytes.NewReader(b.Bytes()), int64(b.Len()), first, 1<<30, sc, func(line []byte, off int64) bool {
			got = append([]string{string(line)}, got...)
			gotOffs = append([]int64{off}, gotOffs...)
			return true
		})
		if err != nil || !atStart {
			t.Fatalf("iter %d: err %v atStart %v", iter, err, atStart)
		}
		if !slices.Equal(want, got) || !slices.Equal(offs, gotOffs) {
			t.Fatalf("iter %d (first read %d): got %d lines at %v, want %d at %v", iter, first, len(got), gotOffs, len(want), offs)
		}
	}
	// A line of 8 MiB is read in a few reads that double what is carried, not
	// in 256 KiB reads each moving and searching all that came before (32 of
	// them: quadratic in the line's length).
	long := "x\n" + strings.Repeat("y", 8<<20) + "\n"
	cr := &countingReaderAt{r: strings.NewReader(long)}
	var lines int
	if _, err := scanBackward(cr, int64(len(long)), tailFirst, 1<<30, sc, func([]byte, int64) bool { lines++; return true }); err != nil || lines != 2 {
		t.Fatalf("%d lines, %v", lines, err)
	}
	if cr.calls > 12 {
		t.Errorf("an 8 MiB line took %d reads", cr.calls)
	}
}

// Listing reads head and tail only: a large rollout listed from the DB costs a
// small backward read.
func TestListingDoesNotReadWholeRollout(t *testing.T) {
	home := fixtureHome(t)
	p := paddedRollout(t, home)
	f, _ := os.Open(p)
	defer f.Close()
	fi, _ := f.Stat()
	cr := &countingReaderAt{r: f}
	tl, err := readTail(cr, fi.Size(), false, &scratch{})
	if err != nil || tl.Turn != turnDone || tl.Tokens == nil {
		t.Fatalf("tail %+v %v", tl, err)
	}
	if cr.n > 64<<10 {
		t.Errorf("tail read %d bytes of a %d-byte rollout", cr.n, fi.Size())
	}
	// The head stops at the first prompt.
	h, _ := readHead(f, fi.Size(), &scratch{})
	if h.Prompt != "prefix test" {
		t.Errorf("head prompt %q", h.Prompt)
	}
}

// paddedRollout pads the fixture rollout id5425 with 50 MiB of records listing
// does not need, between its first prompt and its last turn; it returns its path.
func paddedRollout(t *testing.T, home string) string {
	p := rolloutPath(t, home, id5425)
	padRollout(t, p, 12, 50, 1<<20, "2026-11-20T21:50:16.720Z")
	return p
}

// padRollout inserts n world_state records of about size bytes each, stamped
// ts, after the first at lines of the rollout p: records no reader needs.
func padRollout(t *testing.T, p string, at, n, size int, ts string) {
	lines := readLinesOf(t, p)
	filler := `{"timestamp":"` + ts + `","type":"world_state","payload":{"pad":"` + strings.Repeat("p", size) + `"}}`
	out := append([]string(nil), lines[:at]...)
	for i := 0; i < n; i++ {
		out = append(out, filler)
	}
	discovertest.WriteLines(t, p, append(out, lines[at:]...)...)
}

// A rollout's summary reads the whole rollout only when the command shows its
// usage slots (Env.Slots, `usage --by day`); otherwise its head and tail, and
// the summary says its slots were not counted (issue 10: cost follows what is
// shown).
func TestSummaryReadsWholeRolloutForSlotsOnly(t *testing.T) {
	home := fixtureHome(t)
	p := paddedRollout(t, home)
	f, err := os.Open(p)
	must(t, err)
	defer f.Close()
	fi, err := f.Stat()
	must(t, err)
	sums := map[bool]*summary{}
	for _, slots := range []bool{false, true} {
		st := &state{ix: index.Load[*summary]("", Name, indexVersion), slots: slots}
		cr := &countingReaderAt{r: f}
		// needCtx false: this rollout's one turn_context lies before the
		// padding, and the backward scan for it would read through it.
		sum, size, _, err := st.summarizeFrom(cachedRollout{plan: index.Rebuild}, p, cr, fi, true, false, &scratch{})
		if err != nil || size != fi.Size() {
			t.Fatalf("slots=%v: %v (size %d of %d)", slots, err, size, fi.Size())
		}
		sums[slots] = sum
		switch {
		case !slots && (cr.n > 1<<20 || !sum.NoSlots || sum.Slots != nil || sum.SlotsOff != 0):
			t.Errorf("without slots: read %d bytes of %d, NoSlots %v, %d slots to offset %d", cr.n, fi.Size(), sum.NoSlots, len(sum.Slots), sum.SlotsOff)
		case slots && (cr.n < fi.Size() || sum.NoSlots || len(sum.Slots) == 0 || sum.SlotsOff != fi.Size()):
			t.Errorf("with slots: read %d bytes of %d, NoSlots %v, %d slots to offset %d", cr.n, fi.Size(), sum.NoSlots, len(sum.Slots), sum.SlotsOff)
		}
	}
	with, without := sums[true], sums[false]
	if with.Tail.Tokens == nil || with.Slots.Sum() != tokensOf(with.Tail.Tokens) {
		t.Errorf("slots add up to %+v, the last token count is %+v", with.Slots.Sum(), with.Tail.Tokens)
	}
	// Everything but the slots is the same either way.
	with.Slots, with.SlotsOff, with.SlotsTo, with.NoSlots = nil, 0, discover.Tokens{}, true
	if diff := cmp.Diff(with, without, cmp.AllowUnexported(headInfo{}, tailInfo{})); diff != "" {
		t.Errorf("summaries differ (-with slots +without):\n%s", diff)
	}
}

type countingReaderAt struct {
	r interface {
		ReadAt([]byte, int64) (int, error)
	}
	n     int64 // bytes read
	calls int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	c.calls++
	return n, err
}

func TestShrinkJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":"short","b":"` + strings.Repeat("x", 50) + `"}`, `{"a":"short","b":""}`},
		{`{"k":"es\"caped \\\\ ` + strings.Repeat("y", 40) + `","n":[1,"ok"]}`, `{"k":"","n":[1,"ok"]}`},
		{`{"k":"ends with backslash \\\\","m":"` + strings.Repeat("z", 40) + `\""}`, `{"k":"ends with backslash \\\\","m":""}`},
		{`{"broken":"never closed`, `{"broken":"never closed`},
	} {
		if got := string(shrinkJSON([]byte(c.in), 30)); got != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

// Marker-less legacy turns: the last turn is decided by its own messages, not by
// an earlier turn's turn_aborted.
func TestMarkerlessTurnAfterAbort(t *testing.T) {
	head := []string{
		`{"timestamp":"2025-09-03T10:00:00.000Z","type":"session_meta","payload":{"id":"0199a002-0000-7000-8000-000000000003","timestamp":"2025-09-03T10:00:00.000Z","cwd":"/w"}}`,
		`{"timestamp":"2025-09-03T10:00:01.000Z","type":"event_msg","payload":{"type":"user_message","message":"first"}}`,
		`{"timestamp":"2025-09-03T10:00:02.000Z","type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}`,
		`{"timestamp":"2025-09-03T10:00:03.000Z","type":"event_msg","payload":{"type":"user_message","message":"second"}}`,
	}
	for _, c := range []struct {
		extra []string
		want  turnState
	}{
		{nil, turnOpen},
		{[]string{`{"timestamp":"2025-09-03T10:00:04.000Z","type":"event_msg","payload":{"type":"agent_message","message":"done"}}`}, turnDone},
	} {
		p := filepath.Join(t.TempDir(), "r.jsonl")
		discovertest.WriteLines(t, p, append(append([]string{}, head...), c.extra...)...)
		f, _ := os.Open(p)
		fi, _ := f.Stat()
		tl, err := readTail(f, fi.Size(), false, &scratch{})
		f.Close()
		if err != nil || !tl.TurnKnown || tl.Turn != c.want {
			t.Errorf("%d extra lines: turn %v known %v, want %v", len(c.extra), tl.Turn, tl.TurnKnown, c.want)
		}
	}
}

// Issue 19: a token_count record whose cumulative usage cannot be true (a negative
// count, a part larger than its whole, a count over 10¹²) is skipped in favour of
// the previous valid one, with a warning naming the session; a warm parse index
// gives the same listing and warning.
func TestImpossibleTokenCountSkipped(t *testing.T) {
	const good = `"total_token_usage":{"input_tokens":84,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":14,"reasoning_output_tokens":0,"total_tokens":98}`
	for _, tc := range []struct {
		name, usage string
		bad         bool
	}{
		{"valid", `"total_token_usage":{"input_tokens":84,"cached_input_tokens":40,"cache_write_input_tokens":4,"output_tokens":14,"reasoning_output_tokens":14,"total_tokens":98}`, false},
		{"negative input", `"total_token_usage":{"input_tokens":-84,"output_tokens":14,"total_tokens":98}`, true},
		{"negative total", `"total_token_usage":{"input_tokens":84,"output_tokens":14,"total_tokens":-1}`, true},
		{"cached over input", `"total_token_usage":{"input_tokens":84,"cached_input_tokens":85,"output_tokens":14,"total_tokens":98}`, true},
		{"cached plus write over input", `"total_token_usage":{"input_tokens":84,"cached_input_tokens":80,"cache_write_input_tokens":5,"output_tokens":14,"total_tokens":98}`, true},
		{"reasoning over output", `"total_token_usage":{"input_tokens":84,"output_tokens":14,"reasoning_output_tokens":15,"total_tokens":98}`, true},
		{"over 10^12", `"total_token_usage":{"input_tokens":1000000000001,"output_tokens":14,"total_tokens":98}`, true},
		{"int64 max", `"total_token_usage":{"input_tokens":9223372036854775807,"cached_input_tokens":9223372036854775807,"cache_write_input_tokens":9223372036854775807,"output_tokens":14,"total_tokens":98}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := fixtureHome(t)
			p := rolloutPath(t, home, id1023)
			lines := readLinesOf(t, p)[:24] // through the second task_complete
			if !strings.Contains(lines[22], good) {
				t.Fatalf("premise: line 23 is not the second cumulative count: %s", lines[22])
			}
			lines[22] = strings.Replace(lines[22], good, tc.usage, 1)
			discovertest.WriteLines(t, p, lines...)
			os.Remove(filepath.Join(codexDir(home), "state_5.sqlite"))
			env := testEnv(home, nil, nil)
			env.StateDir = t.TempDir() // a real parse index, read warm on the second pass
			want := &discover.Tokens{Input: 40, Output: 14, CacheRead: 40, CacheWrite: 4}
			if tc.bad {
				want = &discover.Tokens{Input: 42, Output: 7} // the first turn's count
			}
			for pass := range 2 {
				s, warns := discoverWarn(t, env)
				if diff := cmp.Diff(want, s.Tokens); diff != "" {
					t.Errorf("pass %d: tokens (-want +got):\n%s", pass, diff)
				}
				warned := strings.Contains(strings.Join(warns, "\n"), "session "+id1023+": 1 token_count record(s) with a negative or impossible cumulative count skipped; the previous valid one is used")
				if warned != tc.bad {
					t.Errorf("pass %d: warned %v, want %v: %q", pass, warned, tc.bad, warns)
				}
			}
		})
	}
	// Every count impossible: no totals at all, never a clamped one.
	home := fixtureHome(t)
	p := rolloutPath(t, home, id1023)
	lines := readLinesOf(t, p)[:24]
	for i, l := range lines {
		lines[i] = strings.Replace(l, `"total_token_usage":{"input_tokens":`, `"total_token_usage":{"input_tokens":-`, 1)
	}
	discovertest.WriteLines(t, p, lines...)
	os.Remove(filepath.Join(codexDir(home), "state_5.sqlite"))
	s, warns := discoverWarn(t, testEnv(home, nil, nil))
	if s.Tokens != nil || !strings.Contains(strings.Join(warns, "\n"), "2 token_count record(s) with a negative or impossible cumulative count skipped; so it has no token totals") {
		t.Errorf("tokens %+v, warnings %q", s.Tokens, warns)
	}
}

// discoverWarn lists id1023 and returns the warnings given.
func discoverWarn(t *testing.T, env *discover.Env) (discover.Session, []string) {
	t.Helper()
	var warns []string
	ss, err := testAdapter(nil).Discover(context.Background(), env.WithWarn(func(w string) { warns = append(warns, w) }))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if s.ID == id1023 {
			return s, warns
		}
	}
	t.Fatalf("%s not listed; warnings %q", id1023, warns)
	return discover.Session{}, nil
}

// FuzzLastNewline: lastNewline finds what bytes.LastIndexByte does.
func FuzzLastNewline(f *testing.F) {
	f.Add([]byte("a\nbcdefghijklmnop"))
	f.Add([]byte("\n\n\n\n\n\n\n\n\n"))
	f.Add([]byte("abcdefgh\x0b\x09\x8a\n12345678"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for end := len(b); end >= 0; end-- {
			if got, want := lastNewline(b[:end]), bytes.LastIndexByte(b[:end], '\n'); got != want {
				t.Fatalf("lastNewline(%q) = %d, want %d", b[:end], got, want)
			}
		}
	})
}

// checkMemScans: the scans of a rollout read whole into memory hand fn the
// same lines, offsets and answers as the scans of the file, for every stop.
func checkMemScans(t *testing.T, data []byte) {
	t.Helper()
	type got struct {
		Lines   []string
		Offs    []int64
		AtStart bool
	}
	size := int64(len(data))
	for _, stop := range []int{0, 1, 3} {
		scan := func(r io.ReaderAt, backward bool, limit int64) got {
			var g got
			fn := func(line []byte, off int64) bool {
				g.Lines = append(g.Lines, string(line))
				g.Offs = append(g.Offs, off)
				return len(g.Lines) != stop
			}
			var err error
			if backward {
				g.AtStart, err = scanBackward(r, size, 4, tailBudget, &scratch{}, fn)
			} else {
				err = scanForward(r, size, limit, &scratch{}, fn)
			}
			if err != nil {
				t.Fatal(err)
			}
			return g
		}
		for _, limit := range []int64{size, size / 2, size + 10} {
			if diff := cmp.Diff(scan(bytes.NewReader(data), false, limit), scan(memFile(data), false, limit)); diff != "" {
				t.Fatalf("forward over %q to %d, stop %d (-file +memory):\n%s", data, limit, stop, diff)
			}
		}
		if diff := cmp.Diff(scan(bytes.NewReader(data), true, 0), scan(memFile(data), true, 0)); diff != "" {
			t.Fatalf("backward over %q, stop %d (-file +memory):\n%s", data, stop, diff)
		}
		// The backward scan over line ends a forward pass recorded (readSlots,
		// then readTail) hands fn the same lines.
		var g got
		sc := &scratch{}
		m := memFile(data)
		m.scanLines(size, sc, func([]byte, int64) bool { return true })
		if _, ok := sc.newlines(m, size); !ok && size > 0 {
			t.Fatalf("forward pass over %q recorded no line ends", data)
		}
		g.AtStart = m.backward(size, sc, func(line []byte, off int64) bool {
			g.Lines = append(g.Lines, string(line))
			g.Offs = append(g.Offs, off)
			return len(g.Lines) != stop
		})
		if diff := cmp.Diff(scan(bytes.NewReader(data), true, 0), g); diff != "" {
			t.Fatalf("backward over %q with recorded line ends, stop %d (-file +memory):\n%s", data, stop, diff)
		}
	}
	// Line ends recorded by a pass that stopped early, or for other bytes, are
	// not used.
	if size > 1 {
		sc := &scratch{}
		m := memFile(data)
		m.scanLines(size, sc, func([]byte, int64) bool { return false })
		if nl, ok := sc.newlines(m, size); ok && int64(sc.nlTo) < size {
			t.Fatalf("newlines answered %v for %d bytes after a pass that stopped at %d", nl, size, sc.nlTo)
		}
		m.scanLines(size, sc, func([]byte, int64) bool { return true })
		other := memFile(append([]byte(nil), data...))
		if _, ok := sc.newlines(other, size); ok {
			t.Fatal("newlines answered for other memory")
		}
		sc.file = data
		sc.readWhole(bytes.NewReader(data), size)
		if _, ok := sc.newlines(m, size); ok {
			t.Fatal("newlines answered after readWhole reused the buffer")
		}
	}
}

func TestMemScansFixtures(t *testing.T) {
	paths, _ := filepath.Glob("testdata/*/.codex/sessions/*/*/*/*.jsonl")
	if len(paths) == 0 {
		t.Fatal("no rollouts in testdata")
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		checkMemScans(t, b)
		checkMemScans(t, b[:len(b)*2/3]) // a partial last line
	}
	checkMemScans(t, []byte("a\r\n\n\r\nb"))
	checkMemScans(t, []byte(strings.Repeat("x", 70000)+"\n"+strings.Repeat("y", 5000)+"\nz\n"))
}

// FuzzMemScans: for any bytes, the scans in memory and of a file agree.
func FuzzMemScans(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n\n{\"b\":2}\r\n{\"c\""))
	f.Add([]byte("\n\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkMemScans(t, b)
	})
}

// FuzzFlatUsage: where flatUsage answers, it answers as json.Unmarshal.
func FuzzFlatUsage(f *testing.F) {
	f.Add([]byte(`{"input_tokens":12,"cached_input_tokens":0,"output_tokens":-3,"reasoning_output_tokens":1,"total_tokens":9223372036854775807}`))
	f.Add([]byte(`{"input_tokens":01}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var got usage
		if !flatUsage(b, &got) {
			return
		}
		var want usage
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("flatUsage answered for %q, which json.Unmarshal rejects: %v", b, err)
		}
		if got != want {
			t.Fatalf("flatUsage(%q) = %+v, json.Unmarshal %+v", b, got, want)
		}
	})
}

func TestFlatUsage(t *testing.T) {
	for _, c := range []struct {
		obj string
		ok  bool
	}{
		{`{"input_tokens":12,"cached_input_tokens":3,"cache_write_input_tokens":0,"output_tokens":4,"reasoning_output_tokens":1,"total_tokens":16}`, true},
		{`{}`, true},
		{`{"input_tokens":1,"input_tokens":2}`, false},
		{`{"Input_tokens":1}`, false},
		{`{"input_tokens":1.5}`, false},
		{`{"input_tokens":99999999999999999999}`, false},
		{`{"input_tokens": 1}`, false},
		{`{"other":1}`, false},
	} {
		var u usage
		if got := flatUsage([]byte(c.obj), &u); got != c.ok {
			t.Errorf("flatUsage(%s) = %v, want %v", c.obj, got, c.ok)
		}
	}
}

// FuzzUserOrAssistant: userOrAssistant answers as the two searches it replaces.
func FuzzUserOrAssistant(f *testing.F) {
	f.Add([]byte(`{"type":"message","role":"developer","content":[{"text":"\"role\":\"user\""}]}`))
	f.Add([]byte(`{"role":"role":"user"}`))
	f.Add([]byte(`"role":"assistant"`))
	f.Add([]byte(`"role":"use`))
	f.Fuzz(func(t *testing.T, b []byte) {
		want := bytes.Contains(b, []byte(`"role":"user"`)) || bytes.Contains(b, []byte(`"role":"assistant"`))
		if got := userOrAssistant(b); got != want {
			t.Fatalf("userOrAssistant(%q) = %v, want %v", b, got, want)
		}
	})
}
