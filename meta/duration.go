package meta

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseDuration is the one duration syntax of agentctl's flags, environment and
// config (list --since, wait --timeout, --timeout, lock --ttl, launch_ttl): a Go
// duration, or a plain decimal number of days with a "d" suffix ("7d", "1.5d").
// It is strict: anything else, including "1xd", "infd" and a day count too large
// for a time.Duration, is an error, never a partly read number.
func ParseDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if n, ok := strings.CutSuffix(v, "d"); ok {
		f, err := strconv.ParseFloat(n, 64)
		if err != nil || !decimal(n) || f*float64(24*time.Hour) >= math.MaxInt64 {
			return 0, fmt.Errorf("invalid duration %q", v)
		}
		return time.Duration(f * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q", v)
	}
	return d, nil
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
