package claude

import (
	"testing"
	"time"
)

// tsMillisRef is tsMillis through a decoded copy of the string (as it was).
func tsMillisRef(v []byte) int64 {
	s := str(v)
	if s == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}

func checkStrViews(t *testing.T, v []byte) {
	t.Helper()
	if got, want := tsMillis(v), tsMillisRef(v); got != want {
		t.Fatalf("tsMillis(%q) = %d, decoding it first gives %d", v, got, want)
	}
	if got, want := stopReason(v), str(v); got != want {
		t.Fatalf("stopReason(%q) = %q, str gives %q", v, got, want)
	}
}

// TestStrViews: the timestamp parsed from a view of the line and the stop
// reasons returned without a copy are what decoding the string gives.
func TestStrViews(t *testing.T) {
	for _, v := range []string{
		`"2026-01-02T03:04:05.678Z"`, `"2026-01-02T03:04:05Z"`, `"2026-01-02T03:04:05.678+02:00"`,
		`"2026-01-02T03:04:05.678\u005a"`, `"2026-01-02T03:04:05.678Z\u0000"`, `"2026-13-02T03:04:05Z"`,
		`""`, `"`, `null`, `5`, `"end_turn"`, `"tool_use"`, `"end\u005fturn"`, `"stop_sequence"`, `"max_tokens"`,
		`"pause_turn"`, "\"2026-01-02T03:04:05.678Z\xff\"",
	} {
		checkStrViews(t, []byte(v))
	}
	if tsMillis([]byte(`"2026-01-02T03:04:05.678\u005a"`)) == 0 {
		t.Error("an escaped timestamp was not decoded")
	}
}

func FuzzStrViews(f *testing.F) {
	for _, s := range []string{`"2026-01-02T03:04:05.678Z"`, `"end_turn"`, `"a\u0062"`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkStrViews)
}
