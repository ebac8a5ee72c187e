package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// A listing holds every session until it is printed. With the runtime's default
// pacing (GOGC=100) the heap grows to about twice the live data before the
// collector runs, so for a history of 25,000 sessions (about 30 MB live at the
// peak) much of the process's memory was garbage waiting to be collected.
// listMemoryLimit is a soft limit (runtime/debug.SetMemoryLimit) that makes the
// collector run before that. It suits a listing from a warm parse index, which
// allocates little beyond what it keeps. Once the live data itself passes
// listLiveCeiling (a bigger history), or the collector has run listMaxCycles
// times (a listing that parses transcripts, allocating far more: a warm listing
// of 25,000 sessions takes fewer than 20), the collector would run nearly back
// to back, so the limit is lifted and the default pacing applies again: memory
// then grows with the work, as README "Performance" allows, instead of time.
const (
	listMemoryLimit = 40 << 20
	listLiveCeiling = 36 << 20
	listMaxCycles   = 40
)

var limitOnce sync.Once

// limitListMemory applies listMemoryLimit for the rest of the process, unless
// the user set GOMEMLIMIT or GOGC (theirs win).
func limitListMemory() {
	limitOnce.Do(func() {
		for _, k := range []string{"GOMEMLIMIT", "GOGC"} {
			if _, set := os.LookupEnv(k); set {
				return
			}
		}
		debug.SetMemoryLimit(listMemoryLimit)
		m := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
		metrics.Read(m)
		lastCycle := m[1].Value.Uint64() + listMaxCycles
		afterEachGC(func() bool {
			metrics.Read(m)
			if m[0].Value.Uint64() <= listLiveCeiling && m[1].Value.Uint64() <= lastCycle {
				return true
			}
			debug.SetMemoryLimit(math.MaxInt64)
			return false
		})
	})
}

// gcSentinel holds a pointer so that it is never a tiny allocation (whose
// cleanup may never run).
type gcSentinel struct{ _ *byte }

// afterEachGC calls fn after each garbage collection until fn returns false.
func afterEachGC(fn func() bool) {
	runtime.AddCleanup(&gcSentinel{}, func(fn func() bool) {
		if fn() {
			afterEachGC(fn)
		}
	}, fn)
}
