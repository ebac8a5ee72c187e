package discover

import "context"

type noRawKey struct{}

// WithoutRaw marks a Peek whose caller does not print the native records
// (peek without --raw): an adapter may then leave Message.Raw empty, which
// spares it copying megabytes of tool output it read from a memory-mapped file.
func WithoutRaw(ctx context.Context) context.Context {
	return context.WithValue(ctx, noRawKey{}, true)
}

// WantRaw reports whether Peek's caller may use Message.Raw (the default).
func WantRaw(ctx context.Context) bool {
	return ctx.Value(noRawKey{}) == nil
}
