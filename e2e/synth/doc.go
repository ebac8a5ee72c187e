// Package synth writes synthetic agent homes — realistic in shape and size, made
// up in content — for benchmarks and scale tests: thousands of sessions with
// multi-megabyte transcripts, which no fixture directory should hold. Output is
// deterministic for a given seed, except that timestamps are anchored to the
// current time so the sessions fall inside list's default 7-day window.
package synth
