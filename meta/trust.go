package meta

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// The trust rule (like git's safe.directory): agentctl runs nothing — fuse
// scripts, hooks, webhooks, adapter binaries from config, notify targets — that
// a state dir, config or record names unless the dir and the file are owned by
// the caller (the effective uid) and writable by no one else. Otherwise another
// user, or anyone on a 0777 dir, could make the caller run their commands.

// trustFiles are the state files that name something agentctl runs or sends
// to: config (binaries, notify targets, webhook URL, hosts), launch records
// (on-complete, webhook), fuses (scripts), the outbox (webhook deliveries).
var trustFiles = []string{ConfigFile, LaunchesFile, "fuses.json", OutboxFile}

// UntrustedError is a state dir or file agentctl runs nothing from: which path,
// why, and the safe fix.
type UntrustedError struct {
	Path   string
	Reason string // "is owned by uid 1001 (bob), not by you (uid 0)", "is writable by others (mode 0777)"
	Fix    string
}

func (e *UntrustedError) Error() string {
	return fmt.Sprintf("%s %s: agentctl runs nothing it names (fuse scripts, hooks, webhooks, adapter binaries, notify targets); %s",
		e.Path, e.Reason, e.Fix)
}

// Trusted reports whether agentctl may run what this state dir names: nil, or
// an *UntrustedError for the first of the dir and the files that name things to
// run (trustFiles) failing CheckOwned. A missing dir or file names nothing and
// passes. It is checked where something is about to run, not cached: the dir
// may be swapped between two checks of one command.
func (s *Store) Trusted() error {
	if err := CheckOwned(s.Dir, true); err != nil {
		return err
	}
	for _, name := range trustFiles {
		if err := CheckOwned(s.Path(name), false); err != nil {
			return err
		}
	}
	return nil
}

// CheckOwned is the one ownership check: path (followed if a link: what counts
// is what is read) must be owned by the effective uid and not writable by group
// or others. A missing path passes. isDir picks the fix: a foreign dir is left
// to its owner (never adopted by chown), a foreign file in one's own dir is
// reviewed and replaced.
func CheckOwned(path string, isDir bool) error {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &UntrustedError{Path: path, Reason: "cannot be checked (" + err.Error() + ")", Fix: "check its permissions, or point AGENTCTL_HOME at a directory of your own"}
	}
	euid := os.Geteuid()
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != euid {
		uid := int(sys.Uid)
		reason := fmt.Sprintf("is owned by %s, not by you (uid %d)", uidName(uid), euid)
		return &UntrustedError{Path: path, Reason: reason, Fix: ForeignOwnerFix(path, uid, isDir)}
	}
	if perm := st.Mode().Perm(); perm&0o022 != 0 {
		want := "600"
		if isDir {
			want = "700"
		}
		return &UntrustedError{Path: path, Reason: fmt.Sprintf("is writable by others (mode %04o)", perm),
			Fix: fmt.Sprintf("check what others may have put there, then chmod %s %s", want, path)}
	}
	return nil
}

// ForeignOwnerFix is the safe fix for a state path another user owns: never
// to adopt it (chown to the caller would make their fuses and hooks the
// caller's), but to leave a dir to its owner, and to review and replace a file.
func ForeignOwnerFix(path string, uid int, isDir bool) string {
	if isDir {
		return fmt.Sprintf("run agentctl as %s, or set AGENTCTL_HOME to a directory of your own", uidName(uid))
	}
	return fmt.Sprintf("if you trust its content, replace it with a copy of your own (cp %s %s.mine && mv %s.mine %s); otherwise remove it",
		path, path, path, path)
}

// uidName is "uid N (name)", or "uid N" when the name is unknown.
func uidName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return fmt.Sprintf("uid %d (%s)", uid, u.Username)
	}
	return "uid " + strconv.Itoa(uid)
}
