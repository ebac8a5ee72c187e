package main

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestAfterEachGC: the hook runs after collections until it says stop.
func TestAfterEachGC(t *testing.T) {
	var n atomic.Int32
	afterEachGC(func() bool { return n.Add(1) < 3 })
	deadline := time.Now().Add(5 * time.Second)
	for n.Load() < 3 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	for i := 0; i < 5; i++ {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	if got := n.Load(); got != 3 {
		t.Fatalf("hook ran %d times, want 3", got)
	}
}
