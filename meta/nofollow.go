package meta

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// State files are opened with O_NOFOLLOW: a symbolic link where a state file
// should be (planted, or left by a restore) is never written, chmodded or
// created through. It is moved aside to <name>.symlink-<timestamp> with a
// warning, and a regular file takes its place.

// isLinkErr reports whether an O_NOFOLLOW open failed because the last path
// element is a symbolic link (ELOOP; EMLINK on some BSDs).
func isLinkErr(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)
}

// openNoFollow opens path with O_NOFOLLOW. A symbolic link is moved aside with
// a warning (warn may be nil) and the open is tried once more.
func openNoFollow(path string, flag int, perm os.FileMode, now time.Time, warn func(string, ...any)) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW, perm)
	if err == nil || !isLinkErr(err) {
		return f, err
	}
	aside, qerr := quarantineLink(path, now)
	if qerr != nil {
		return nil, qerr
	}
	if warn != nil {
		warn("%s was a symbolic link; agentctl does not write through links: moved it to %s", path, aside)
	}
	return os.OpenFile(path, flag|syscall.O_NOFOLLOW, perm)
}

// quarantineLink renames the symbolic link at path (not its target) aside.
func quarantineLink(path string, now time.Time) (string, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", path, err)
	}
	if st.Mode()&os.ModeSymlink == 0 {
		return "", fmt.Errorf("open %s: %w", path, syscall.ELOOP)
	}
	aside := fmt.Sprintf("%s.symlink-%s", path, now.UTC().Format("20060102T150405.000000000Z"))
	if err := os.Rename(path, aside); err != nil {
		return "", fmt.Errorf("%s is a symbolic link and moving it aside failed: %w", path, err)
	}
	return aside, nil
}

// OpenAppend opens a log file of the state dir (logs/*.log) for appending,
// creating it 0600, never through a symbolic link (one is moved aside with a
// warning; warn may be nil).
func OpenAppend(path string, warn func(string, ...any)) (*os.File, error) {
	return openNoFollow(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600, time.Now(), warn)
}

// appendLine appends b (one or more whole lines) to the open O_APPEND file f
// with one write; a write that fails part-way is cut back off. A torn last line — a write cut short by a full disk or a
// crash — is ended first, so the new line starts on a line boundary and is
// not glued to the fragment (which stays one unreadable line). The caller
// holds the file's lock.
func appendLine(f *os.File, b []byte) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	n := st.Size()
	if n > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], n-1); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if last[0] != '\n' {
			b = append([]byte{'\n'}, b...)
		}
	}
	if w, err := f.Write(b); err != nil {
		if w > 0 {
			_ = f.Truncate(n) // take back the torn part (best effort; the next append ends it otherwise)
		}
		return err
	}
	return nil
}
