//go:build !linux

package harness

import (
	"os"
	"strconv"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func owner() string { return strconv.Itoa(os.Getpid()) + ".0" }

// guard: without /proc there is no way to find other processes' tags; cleanup's
// process-group kill is all there is.
func guard() {}
