package send

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// WritePiRPC writes one "prompt" command line (followUp while pi streams)
// into a FIFO some reader holds; with no reader (the pi ended) it fails with
// ErrPiGone and writes nothing; it never writes into anything but a 0600
// FIFO of this user.
func TestWritePiRPC(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "in")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := WritePiRPC(ctx, fifo, "s1", "hi"); !errors.Is(err, ErrPiGone) {
		t.Errorf("no reader: %v; want ErrPiGone", err)
	}
	r, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	msg := "two\nlines, \"quoted\" and \u2028 separated"
	if err := WritePiRPC(ctx, fifo, "s2", msg); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	want := map[string]string{"id": "s2", "type": "prompt", "message": msg, "streamingBehavior": "followUp"}
	if diff := cmp.Diff(want, got); diff != "" || strings.Count(line, "\n") != 1 {
		t.Errorf("command line %q (-want +got):\n%s", line, diff)
	}

	open := filepath.Join(dir, "open")
	if err := syscall.Mkfifo(open, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o622)
	reg := filepath.Join(dir, "regular")
	os.WriteFile(reg, nil, 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(fifo, link)
	for _, p := range []string{open, reg, link} {
		if err := WritePiRPC(ctx, p, "s3", "x"); err == nil || !strings.Contains(err.Error(), "not writing to it") {
			t.Errorf("%s: %v; want a refusal", filepath.Base(p), err)
		}
	}
	if b, _ := os.ReadFile(reg); len(b) != 0 {
		t.Errorf("the regular file got %q", b)
	}
}
