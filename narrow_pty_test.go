package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/creack/pty"
)

// TestListFitsRealTerminal runs list with stdout on a real pseudo-terminal of
// 60 columns and no $COLUMNS: the width comes from the terminal itself
// (termWidth, as realHost asks it) and no line of the table is wider (issue 37
// item 15).
func TestListFitsRealTerminal(t *testing.T) {
	master, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty here: %v", err)
	}
	defer master.Close()
	if err := pty.Setsize(tty, &pty.Winsize{Cols: 60, Rows: 40}); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(t.TempDir(), "home")
	if err := os.CopyFS(home, os.DirFS("testdata/home")); err != nil {
		t.Fatal(err)
	}
	s, _, errOut := testHost(t)
	getenv := s.getenv
	s.getenv = func(k string) string {
		if k == "COLUMNS" {
			return ""
		}
		return getenv(k)
	}
	s.Out = tty
	s.outTTY = isTerminal(tty)
	s.outWidth = termWidth(s.outTTY, tty, s.getenv)
	if !s.outTTY || s.outWidth != 60 {
		t.Fatalf("a 60-column pty: outTTY %v, width %d", s.outTTY, s.outWidth)
	}
	var got bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&got, master); close(done) }()
	code := run(context.Background(), []string{"agentctl", "--home", home, "list", "-a", "--since", "3650d", "--no-color"}, s)
	tty.Close()
	<-done
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(got.String(), "\r\n", "\n"), "\n"), "\n")
	if len(lines) != 29 || !strings.HasPrefix(lines[0], "ID ") {
		t.Fatalf("want the header and 28 sessions, got %d lines:\n%s", len(lines), got.String())
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 60 {
			t.Errorf("a line of %d columns in a 60-column terminal: %q", n, l)
		}
	}
}
