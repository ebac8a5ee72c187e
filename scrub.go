package main

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/agentctl/agentctl/discover"
)

// scrubSession drops from s every value JSON cannot carry or that cannot be
// true — a time RFC 3339 cannot print (year outside 0000–9999, a zone offset of
// a day or more), a NaN, infinite or negative cost, a negative token count, an
// extra value encoding/json refuses — and returns the names of the fields it
// dropped. One bad value never costs the session, and one session never costs
// the listing (product.md §3): the caller warns naming session and field.
func scrubSession(s *discover.Session) (dropped []string) {
	for _, f := range []struct {
		name string
		p    **time.Time
	}{{"started_at", &s.StartedAt}, {"last_activity", &s.LastActivity}, {"ended_at", &s.EndedAt}} {
		if *f.p != nil && !timeJSONOK(**f.p) {
			*f.p = nil
			dropped = append(dropped, f.name)
		}
	}
	if c := s.CostUSD; c != nil && (math.IsNaN(*c) || math.IsInf(*c, 0) || *c < 0) {
		s.CostUSD, s.CostSource = nil, ""
		dropped = append(dropped, "cost_usd")
	}
	if t := s.Tokens; t != nil && (t.Input < 0 || t.Output < 0 || t.CacheRead < 0 || t.CacheWrite < 0) {
		s.Tokens = nil
		dropped = append(dropped, "tokens")
	}
	if len(s.Extra) > 0 {
		var extra map[string]any
		for k, v := range s.Extra {
			if _, err := json.Marshal(v); err != nil {
				if extra == nil {
					extra = make(map[string]any, len(s.Extra))
					for k, v := range s.Extra {
						extra[k] = v
					}
				}
				delete(extra, k)
				dropped = append(dropped, "extra."+k)
			}
		}
		if extra != nil {
			s.Extra = extra
		}
	}
	return dropped
}

// needsScrub is scrubSession's cheap test, run on every listed session.
func needsScrub(s *discover.Session) bool {
	for _, t := range []*time.Time{s.StartedAt, s.LastActivity, s.EndedAt} {
		if t != nil && !timeJSONOK(*t) {
			return true
		}
	}
	if c := s.CostUSD; c != nil && (math.IsNaN(*c) || math.IsInf(*c, 0) || *c < 0) {
		return true
	}
	t := s.Tokens
	return t != nil && (t.Input < 0 || t.Output < 0 || t.CacheRead < 0 || t.CacheWrite < 0)
}

// timeJSONOK reports whether time.Time.MarshalJSON accepts t.
func timeJSONOK(t time.Time) bool {
	if y := t.Year(); y < 0 || y > 9999 {
		return false
	}
	// The zone is printed as ±hh:mm (or Z): hours must be below 24. Checked
	// without formatting: every session's times pass here before printing.
	_, off := t.Zone()
	return -24*3600 < off && off < 24*3600
}

// scrubWarnings are the warnings for the fields scrubSession dropped.
func scrubWarnings(s *discover.Session, dropped []string) []string {
	w := make([]string, len(dropped))
	for i, f := range dropped {
		w[i] = fmt.Sprintf("%s session %s: %s is out of range; left out (the rest of the session is listed)", s.Adapter, s.ID, f)
	}
	return w
}
