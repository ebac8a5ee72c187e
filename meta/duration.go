package meta

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseDuration is the one duration syntax of agentctl's flags, environment and
// config (--since, wait --timeout, --timeout, lock --ttl, launch_ttl): a Go
// duration, or a plain decimal number of days or weeks with a "d" or "w" suffix
// ("7d", "1.5d", "2w"). It is strict: anything else, including "1xd", "infd"
// and a count too large for a time.Duration, is an error, never a partly read
// number.
func ParseDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"d", 24 * time.Hour}, {"w", 7 * 24 * time.Hour}} {
		n, ok := strings.CutSuffix(v, u.suffix)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(n, 64)
		if err != nil || !decimal(n) || f*float64(u.unit) >= math.MaxInt64 {
			return 0, fmt.Errorf("invalid duration %q", v)
		}
		return time.Duration(f * float64(u.unit)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q", v)
	}
	return d, nil
}

// WhenSyntax is what ParseWhen takes, in words for a usage error.
const WhenSyntax = "want a duration back from now (30m, 2h, 7d, 2w) or a date (2026-11-01, 2026-11-01T15:04)"

// whenLayouts are the dates and times ParseWhen takes, read in now's location
// unless they carry a zone; the first is a whole day.
var whenLayouts = []string{time.DateOnly, "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02 15:04:05", time.RFC3339}

// ParseWhen is the one syntax of --since and --until (list, usage, metrics,
// events): a duration back from now (ParseDuration, not negative) or a date
// or date and time. A whole day as an end (--until 2026-11-20) means the end
// of that day, so the day is included, as ccusage reads it.
func ParseWhen(v string, now time.Time, end bool) (time.Time, error) {
	v = strings.TrimSpace(v)
	if d, err := ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for i, layout := range whenLayouts {
		t, err := time.ParseInLocation(layout, v, now.Location())
		if err != nil {
			continue
		}
		if i == 0 && end {
			t = t.AddDate(0, 0, 1)
		}
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%s", WhenSyntax)
}

// decimal reports whether n is digits with at most one '.', which ParseFloat
// alone does not ensure (it also takes "inf", "1e3" and "0x1p4").
func decimal(n string) bool {
	dot := false
	for _, c := range n {
		switch {
		case c == '.' && !dot:
			dot = true
		case c < '0' || c > '9':
			return false
		}
	}
	return n != "" && n != "."
}

// ApplyConfig copies the config's store settings (launch_ttl) into the store. A
// malformed launch_ttl is a warning and the default is used.
func (s *Store) ApplyConfig(c *Config) {
	if c == nil || c.LaunchTTL == "" {
		return
	}
	d, err := ParseDuration(c.LaunchTTL)
	if err != nil || d <= 0 {
		s.warn("config launch_ttl %q: want a positive duration such as 7d or 48h; using %s", c.LaunchTTL, DefaultLaunchTTL)
		d = DefaultLaunchTTL
	}
	s.LaunchTTL = d
}
