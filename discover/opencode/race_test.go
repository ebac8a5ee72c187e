//go:build race

package opencode

// raceSlowdown is how much slower the race detector makes this package's
// code: timed tests scale their bounds by it.
const raceSlowdown = 10
