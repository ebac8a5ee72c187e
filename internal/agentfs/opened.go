package agentfs

import "path/filepath"

// Opened reports to the hook (SetHook) a file opened outside this package, by
// a reader that opens relative to a directory descriptor (openat) to spare the
// kernel the path walk: dir/name is its path. It costs nothing without a hook.
func Opened(dir, name string) {
	if fn := hook.Load(); fn != nil {
		(*fn)(filepath.Join(dir, name))
	}
}

// Hooked reports whether a hook is set (a reader can then skip building the
// paths it would report).
func Hooked() bool { return hook.Load() != nil }
