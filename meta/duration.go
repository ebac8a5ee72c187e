package meta

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseDuration accepts Go durations plus a "d" (days) suffix, as every TTL in
// agentctl does (launch_ttl, lock --ttl, fuse --ttl).
func ParseDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if n, ok := strings.CutSuffix(v, "d"); ok {
		f, err := strconv.ParseFloat(n, 64)
		if err != nil {
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
