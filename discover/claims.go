package discover

import (
	"fmt"
	"strings"
)

// Helpers for the adapters that infer a live session from a process (no record
// of the agent's own names it): which processes may host which sessions, and
// what a process's environment says.

// Claims pairs live processes with the sessions they may host: for each item
// the candidates that own it (in cands order), and for each candidate's pid the
// number of items it owns. An adapter ties a pair only when both are one; any
// other claim is ambiguous, never guessed.
func Claims[C any, T comparable](cands []C, items []T, pid func(C) int, owns func(C, T) bool) (byItem map[T][]C, perPID map[int]int) {
	byItem, perPID = map[T][]C{}, map[int]int{}
	for _, c := range cands {
		for _, it := range items {
			if owns(c, it) {
				perPID[pid(c)]++
				byItem[it] = append(byItem[it], c)
			}
		}
	}
	return byItem, perPID
}

// JoinInts is "1, 2, 3": pids in a detail.
func JoinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// EnvVars maps a process's environment (KEY=value entries) by key; of a key
// given twice, the last one wins.
func EnvVars(environ []string) map[string]string {
	vars := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	return vars
}
