package send

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/proc"
)

// A shell in a tmux pane (pid 100) runs claude (pid 120) through a wrapper
// (110); pid 200 runs outside tmux.
func table() *proc.Fake {
	return &proc.Fake{
		Procs: []proc.Process{{PID: 1}, {PID: 90, PPID: 1}, {PID: 100, PPID: 90}, {PID: 110, PPID: 100}, {PID: 120, PPID: 110}, {PID: 200, PPID: 1}},
		Envs: map[int][]string{
			100: {"TMUX=/tmp/tmux-7/work,90,0", "TMUX_PANE=%4"},
			110: {"PATH=/bin", "TMUX=/tmp/tmux-7/work,90,0", "TMUX_PANE=%4"},
			120: {"PATH=/bin", "TMUX=/tmp/tmux-7/work,90,0", "TMUX_PANE=%4"},
			200: {"PATH=/bin"},
		},
	}
}

type call struct {
	Args  []string
	Stdin string
}

// recorder is a Runner that records each call and answers list-panes with panes.
func recorder(panes string, calls *[]call, fail string) Runner {
	return func(_ context.Context, stdin io.Reader, name string, args ...string) ([]byte, error) {
		c := call{Args: append([]string{name}, args...)}
		if stdin != nil {
			b, _ := io.ReadAll(stdin)
			c.Stdin = string(b)
		}
		*calls = append(*calls, c)
		for _, a := range args {
			if a == fail {
				return nil, errors.New("exit status 1")
			}
			if a == "list-panes" || a == "capture-pane" { // its panes, or the screen
				return []byte(panes), nil
			}
		}
		return nil, nil
	}
}

func TestFindPane(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pid   int
		panes string
		want  Pane
		err   error
	}{
		{"the pane whose process is an ancestor", 120, "55 %1\n100 %4\n", Pane{Socket: "/tmp/tmux-7/work", ID: "%4", PID: 100}, nil},
		{"the process is the pane's own", 100, "100 %4\n", Pane{Socket: "/tmp/tmux-7/work", ID: "%4", PID: 100}, nil},
		{"no pane is an ancestor", 120, "55 %1\n56 %2\n", Pane{}, ErrNoPane},
		{"outside tmux, the default server has no ancestor", 200, "100 %4\n", Pane{}, ErrNoPane},
		{"garbage lines are skipped", 120, "x %9\n100 nope\n\n100 %4\n", Pane{Socket: "/tmp/tmux-7/work", ID: "%4", PID: 100}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []call
			got, err := FindPane(context.Background(), recorder(tc.panes, &calls, ""), table(), tc.pid)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pane (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFindPaneAsksTheServerOfTheSession(t *testing.T) {
	var calls []call
	if _, err := FindPane(context.Background(), recorder("100 %4\n", &calls, ""), table(), 120); err != nil {
		t.Fatal(err)
	}
	want := []call{{Args: []string{"tmux", "-S", "/tmp/tmux-7/work", "list-panes", "-a", "-F", "#{pane_pid} #{pane_id}"}}}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	calls = nil
	_, _ = FindPane(context.Background(), recorder("", &calls, ""), table(), 200)
	if len(calls) != 1 || calls[0].Args[1] != "list-panes" {
		t.Errorf("outside tmux: calls %v, want list-panes on the default server", calls)
	}
}

func TestPasteKeepsTheMessageOutOfArgv(t *testing.T) {
	const msg = "MARKER-7f3 please\nrun the tests; $(rm -rf /) `x`"
	var calls []call
	pane := Pane{Socket: "/tmp/tmux-7/work", ID: "%4", PID: 100}
	// The screen the recorder answers shows the message's last line: one look.
	if err := paste(context.Background(), recorder("> run the tests; $(rm -rf /) `x`\n", &calls, ""), pane, msg, "agentctl-send-1", time.Minute, enterDelay, 0); err != nil {
		t.Fatal(err)
	}
	want := []call{
		{Args: []string{"tmux", "-S", "/tmp/tmux-7/work", "load-buffer", "-b", "agentctl-send-1", "-"}, Stdin: msg},
		{Args: []string{"tmux", "-S", "/tmp/tmux-7/work", "paste-buffer", "-p", "-r", "-d", "-b", "agentctl-send-1", "-t", "%4"}},
		{Args: []string{"tmux", "-S", "/tmp/tmux-7/work", "capture-pane", "-p", "-t", "%4"}},
		{Args: []string{"tmux", "-S", "/tmp/tmux-7/work", "send-keys", "-t", "%4", "Enter"}},
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	for _, c := range calls {
		if strings.Contains(strings.Join(c.Args, " "), "MARKER") {
			t.Errorf("the message is in an argv: %q", c.Args)
		}
	}
}

func TestPasteFailureDeletesTheBufferAndPressesNoEnter(t *testing.T) {
	var calls []call
	err := paste(context.Background(), recorder("", &calls, "paste-buffer"), Pane{ID: "%4"}, "hi", "b1", 0, enterDelay, 0)
	if err == nil || !strings.Contains(err.Error(), "paste-buffer") {
		t.Fatalf("err %v, want one naming paste-buffer", err)
	}
	var verbs []string
	for _, c := range calls {
		verbs = append(verbs, c.Args[1])
	}
	if diff := cmp.Diff([]string{"load-buffer", "paste-buffer", "delete-buffer"}, verbs); diff != "" {
		t.Errorf("tmux verbs (-want +got):\n%s", diff)
	}
}

func TestCanSend(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    discover.Session
		want string
	}{
		{"idle in a pane", discover.Session{Status: "idle", PID: 120}, ViaTmux},
		{"running in a pane (send refuses without --force, but the channel is there)", discover.Session{Status: "running", PID: 120}, ViaTmux},
		{"outside tmux", discover.Session{Status: "idle", PID: 200}, ""},
		{"ended", discover.Session{Status: "stopped", PID: 120}, ""},
		{"no process", discover.Session{Status: "unknown"}, ""},
		{"a background job of no agent agentctl can attach to", discover.Session{Status: "idle", PID: 120, Kind: "background"}, ""},
		{"a Claude Code background session (its daemon hosts it)", discover.Session{Adapter: "claude-code", Status: "idle", PID: 200, Kind: "background", JobID: "3f2a9c1e"}, ViaClaudeAttach},
		{"a Claude Code background session without its job id", discover.Session{Adapter: "claude-code", Status: "idle", PID: 200, Kind: "background"}, ""},
		{"a Claude Code background session that ended", discover.Session{Adapter: "claude-code", Status: "stopped", PID: 200, Kind: "background", JobID: "3f2a9c1e"}, ""},
		{"a process that is gone", discover.Session{Status: "idle", PID: 999}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			if got := CanSend(table(), &s); got != tc.want {
				t.Errorf("CanSend = %q, want %q", got, tc.want)
			}
			m := NewMarker(func() proc.Table { return table() })
			if got := m.Mark(&s).CanSend; got != tc.want {
				t.Errorf("Mark: can_send %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMarkerReadsNoProcessForEndedSessions(t *testing.T) {
	m := NewMarker(func() proc.Table { t.Fatal("the process table was read for an ended session"); return nil })
	m.Mark(&discover.Session{Status: "stopped", PID: 120})
	m.Mark(&discover.Session{Status: "failed"})
}

var sent = time.Date(2026, 12, 2, 4, 0, 0, 500e6, time.UTC)

func user(text string, ts time.Time, uuid string) discover.Message {
	return discover.Message{Kind: "user", Text: text, TS: ts, UUID: uuid}
}

func TestRecorded(t *testing.T) {
	const msg = "run the linter"
	old := user(msg, sent.Add(-time.Hour), "u-old")
	for _, tc := range []struct {
		name  string
		msgs  []discover.Message
		want  string // uuid of the confirming record, "" for none
		early []discover.Message
	}{
		{"the new record", []discover.Message{old, user(msg, sent.Add(time.Second), "u-new")}, "u-new", []discover.Message{old}},
		{"only an earlier one", []discover.Message{old}, "", []discover.Message{old}},
		{"an earlier one that was not in the first read still is older than the send", []discover.Message{old}, "", nil},
		{"a longer text is not this message", []discover.Message{user(msg+" and the tests", sent.Add(time.Second), "u1")}, "", nil},
		{"a prefix is not this message", []discover.Message{user("run the", sent.Add(time.Second), "u1")}, "", nil},
		{"an assistant echo is not a user record", []discover.Message{{Kind: "assistant", Text: msg, TS: sent.Add(time.Second), UUID: "a1"}}, "", nil},
		{"surrounding whitespace and CRLF do not matter", []discover.Message{user("\r\n run the linter \r\n", sent.Add(time.Second), "u2")}, "u2", nil},
		{"a record stamped in whole seconds, in the second of the send", []discover.Message{user(msg, sent.Truncate(time.Second), "u3")}, "u3", nil},
		{"the same text recorded earlier in the second but seen before the send", []discover.Message{user(msg, sent.Truncate(time.Second), "u4")}, "", []discover.Message{user(msg, sent.Truncate(time.Second), "u4")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Recorded(tc.msgs, msg, Earlier(tc.early, msg), sent)
			if (tc.want != "") != ok || got.UUID != tc.want {
				t.Errorf("Recorded = %q, %v; want %q", got.UUID, ok, tc.want)
			}
		})
	}
}

func TestWaitTimesOutWhenNothingIsRecorded(t *testing.T) {
	now := sent
	reads := 0
	w := Waiter{Every: time.Millisecond, Now: func() time.Time { now = now.Add(300 * time.Millisecond); return now },
		Peek: func(context.Context) ([]discover.Message, error) {
			reads++
			if reads == 1 {
				return nil, errors.New("no transcript yet")
			}
			return []discover.Message{user("something else", sent.Add(time.Second), "x")}, nil
		}}
	_, err := w.Wait(context.Background(), "hello", nil, sent, sent.Add(time.Second))
	if !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("err %v, want ErrNotRecorded", err)
	}
	if reads < 2 {
		t.Errorf("%d reads; a failed read must be retried", reads)
	}
}

func TestWaitReturnsTheRecordOnceItAppears(t *testing.T) {
	reads := 0
	w := Waiter{Every: time.Millisecond, Now: func() time.Time { return sent },
		Peek: func(context.Context) ([]discover.Message, error) {
			reads++
			if reads < 3 {
				return nil, nil
			}
			return []discover.Message{user("hello", sent.Add(2*time.Second), "u9")}, nil
		}}
	got, err := w.Wait(context.Background(), "hello", nil, sent, sent.Add(time.Minute))
	if err != nil || got.UUID != "u9" || reads != 3 {
		t.Errorf("Wait = %q, %v after %d reads; want u9 after 3", got.UUID, err, reads)
	}
}

// Enter waits until the pane shows the pasted text (Claude Code 2.1.332 lost an
// Enter that came while it was still taking a paste in), looking again while it
// does not, and is pressed anyway once the wait is over.
func TestPasteWaitsForTheTextOnScreen(t *testing.T) {
	var calls []call
	shown := 0
	run := func(ctx context.Context, stdin io.Reader, name string, args ...string) ([]byte, error) {
		calls = append(calls, call{Args: append([]string{name}, args...)})
		if len(args) > 0 && args[0] == "capture-pane" {
			shown++
			if shown < 3 {
				return []byte("> \n"), nil
			}
			return []byte("> please note the\n  wrapped message\n"), nil
		}
		return nil, nil
	}
	if err := paste(context.Background(), run, Pane{ID: "%4"}, "please note the wrapped message", "b1", time.Minute, enterDelay, 0); err != nil {
		t.Fatal(err)
	}
	if shown != 3 || calls[len(calls)-1].Args[1] != "send-keys" {
		t.Errorf("%d looks, last call %v; want Enter after the third look", shown, calls[len(calls)-1].Args)
	}
	calls, shown = nil, -100
	if err := paste(context.Background(), run, Pane{ID: "%4"}, "never drawn", "b1", 250*time.Millisecond, enterDelay, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if calls[len(calls)-1].Args[1] != "send-keys" {
		t.Errorf("after the wait: last call %v, want Enter anyway", calls[len(calls)-1].Args)
	}
}

// An Enter after which the screen did not move at all was lost (the text still
// sits in the input box): it is pressed again, at most twice more. Any change
// of the screen (the message taken in, a spinner, a permission prompt) ends
// it: never a second Enter into what the message brought up.
func TestPastePressesALostEnterAgain(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sameAfter int // how many looks after an Enter still show the pasted screen
		enters    int
	}{
		{"taken at once", 0, 1},
		{"the first Enter lost", 1, 2},
		{"never taken: three Enters, no more", 10, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enters, looks := 0, 0
			run := func(ctx context.Context, stdin io.Reader, name string, args ...string) ([]byte, error) {
				switch args[0] {
				case "send-keys":
					enters++
				case "capture-pane":
					if enters == 0 {
						return []byte("❯ please note this\n"), nil
					}
					looks++
					if looks <= tc.sameAfter {
						return []byte("❯ please note this\n"), nil
					}
					return []byte("❯ please note this\n✻ Thinking…\n❯ \n"), nil
				}
				return nil, nil
			}
			if err := paste(context.Background(), run, Pane{ID: "%4"}, "please note this", "b1", time.Minute, enterDelay, time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if enters != tc.enters {
				t.Errorf("%d Enters, want %d", enters, tc.enters)
			}
		})
	}
}

// Gemini CLI takes an Enter within 40 ms (as its event loop sees it) of an
// untrusted paste as a newline: its Enter waits longer than the others'.
func TestEnterDelay(t *testing.T) {
	for adapter, want := range map[string]time.Duration{"gemini": 600 * time.Millisecond, "claude-code": 150 * time.Millisecond, "qwen-code": 150 * time.Millisecond} {
		if got := EnterDelay(adapter); got != want {
			t.Errorf("EnterDelay(%s) = %s, want %s", adapter, got, want)
		}
	}
}
