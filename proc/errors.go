package proc

import "errors"

// ErrGone means the process no longer exists (or never did in this snapshot).
var ErrGone = errors.New("process not found")
