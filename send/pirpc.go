package send

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// A pi that agentctl launched with --keep-open runs in RPC mode and reads
// JSON commands, one a line, from a FIFO under agentctl's state dir (its
// launch record's input; docs/agents/pi.md §13). A message is one "prompt"
// command written there: the message travels in the FIFO, never in an argv.

// ErrPiGone: nothing reads the FIFO any more (the pi has ended).
var ErrPiGone = errors.New("no pi reads its input any more (it has ended)")

// pipeWait is how long a send waits for another send's line to go in, and
// for pi to take this one, before it gives up.
const pipeWait = 10 * time.Second

// PiRPCLine is the command that carries msg: "prompt" with streamingBehavior
// followUp. An idle pi starts a turn with it; a pi in a turn (send --force)
// queues it until the turn is over, where "steer" would cut in before the
// turn's next model call. A bare follow_up command would not do: an idle pi
// only queues it, for a turn nothing starts (seen on 1.6.0). id names the
// command in pi's response (in the launch log).
func PiRPCLine(id, msg string) ([]byte, error) {
	b, err := json.Marshal(struct {
		ID                string `json:"id"`
		Type              string `json:"type"`
		Message           string `json:"message"`
		StreamingBehavior string `json:"streamingBehavior"`
	}{id, "prompt", msg, "followUp"})
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// WritePiRPC writes msg as one command into the input FIFO at path. The
// caller has checked that the launch's pi is the process it launched (PID,
// start time, boot id); here the path must still be a FIFO of ours, 0600,
// and a reader must hold it: opening without one fails (ENXIO), so a FIFO
// left behind by a dead pi is never written to. Concurrent sends take turns
// (an exclusive flock on the FIFO), so two lines never interleave.
func WritePiRPC(ctx context.Context, path, id, msg string) error {
	line, err := PiRPCLine(id, msg)
	if err != nil {
		return err
	}
	st, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("the pi's input %s: %w", path, err)
	}
	if st.Mode()&os.ModeNamedPipe == 0 || st.Mode().Perm()&0o077 != 0 || !ownedByMe(st) {
		return fmt.Errorf("%s is not the pi's input FIFO agentctl made (a 0600 FIFO of this user); not writing to it", path)
	}
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENXIO) {
		return ErrPiGone
	} else if err != nil {
		return fmt.Errorf("open the pi's input %s: %w", path, err)
	}
	deadline := time.Now().Add(pipeWait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := lockFD(ctx, fd, deadline); err != nil {
		syscall.Close(fd)
		return err
	}
	// Non-blocking: the runtime's poller waits for room in the pipe, bounded
	// by the deadline below (a pi that stopped reading must not hang send).
	// (Never f.Fd(): it would make the descriptor blocking again.)
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if err := f.SetWriteDeadline(deadline); err != nil {
		return err
	}
	if _, err := f.Write(line); err != nil {
		if errors.Is(err, syscall.EPIPE) {
			return ErrPiGone
		}
		return fmt.Errorf("write to the pi's input %s: %w", path, err)
	}
	return nil
}

// lockFD takes an exclusive flock on fd, polling until deadline.
func lockFD(ctx context.Context, fd int, deadline time.Time) error {
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("lock the pi's input: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("another send held the pi's input for %s; try again", pipeWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ownedByMe reports whether this process's user owns the file.
func ownedByMe(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == os.Geteuid()
}
