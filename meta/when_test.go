package meta

import (
	"testing"
	"time"
)

// TestParseWhen pins the one --since/--until syntax: durations back from now
// (weeks included), dates and times in now's zone, a whole day as an end
// including that day, and nothing else.
func TestParseWhen(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, berlin)
	for _, tc := range []struct {
		v    string
		end  bool
		want time.Time
	}{
		{"2h", false, now.Add(-2 * time.Hour)},
		{"7d", false, now.AddDate(0, 0, -7)},
		{"2w", true, now.AddDate(0, 0, -14)},
		{"1.5d", false, now.Add(-36 * time.Hour)},
		{"0s", true, now},
		{"2026-11-01", false, time.Date(2026, 11, 1, 0, 0, 0, 0, berlin)},
		{"2026-11-20", true, time.Date(2026, 11, 21, 0, 0, 0, 0, berlin)},
		{"2026-11-20T06:30", true, time.Date(2026, 11, 20, 6, 30, 0, 0, berlin)},
		{"2026-11-20 06:30:15", false, time.Date(2026, 11, 20, 6, 30, 15, 0, berlin)},
		{"2026-11-20T06:30:00Z", true, time.Date(2026, 11, 20, 6, 30, 0, 0, time.UTC)},
	} {
		got, err := ParseWhen(tc.v, now, tc.end)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseWhen(%q, end=%v) = %v, %v; want %v", tc.v, tc.end, got, err, tc.want)
		}
	}
	for _, v := range []string{"", "soon", "yesterday", "-1h", "-1d", "1xw", "infw", "2026-13-01", "2026-11-01T25:00"} {
		if got, err := ParseWhen(v, now, false); err == nil {
			t.Errorf("ParseWhen(%q) = %v, want an error", v, got)
		}
	}
}
