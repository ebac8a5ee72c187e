//go:build !linux && !darwin

package codex

import "context"

func defaultHolders() Holders {
	return func(context.Context, []string) (map[string]int, error) { return nil, ErrLocksUnavailable }
}

func defaultOpenFiles() OpenFiles { return nil }
