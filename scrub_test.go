package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
)

func TestSessionsJSONSurvivesOutOfRangeValues(t *testing.T) {
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	neg := time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)
	zone := time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 25*3600))
	ok := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	nan, inf, minus := math.NaN(), math.Inf(1), -230e12
	clean := discover.Session{ID: "clean", Adapter: "codex", Status: "stopped", StartedAt: &ok, Cwd: "/w"}
	ss := []discover.Session{
		{ID: "far", Adapter: "claude-code", StartedAt: &far, LastActivity: &ok},
		clean,
		{ID: "neg", Adapter: "pi", EndedAt: &neg, CostUSD: &nan},
		{ID: "zone", Adapter: "opencode", LastActivity: &zone, CostUSD: &inf},
		{ID: "minus", Adapter: "codex", CostUSD: &minus, Tokens: &discover.Tokens{Input: -5}},
		{ID: "extra", Adapter: "openclaw", Extra: map[string]any{"bad": []float64{math.NaN()}, "good": "x"}},
	}
	var out bytes.Buffer
	var warns []string
	if err := writeSessionsJSON(&out, len(ss), func(i int) *discover.Session { return &ss[i] }, func(m string) { warns = append(warns, m) }); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, out.String())
	}
	if len(got) != len(ss) {
		t.Fatalf("%d sessions listed, want %d", len(got), len(ss))
	}
	if _, has := got[0]["started_at"]; has || got[0]["last_activity"] == nil {
		t.Errorf("far: %v", got[0])
	}
	if _, has := got[4]["tokens"]; has {
		t.Errorf("negative tokens kept: %v", got[4])
	}
	if got[5]["extra"].(map[string]any)["good"] != "x" {
		t.Errorf("extra: %v", got[5])
	}
	for _, want := range []string{"far: started_at", "neg: ended_at", "neg: cost_usd", "zone: last_activity", "zone: cost_usd", "minus: cost_usd", "minus: tokens", "extra: extra.bad"} {
		if !strings.Contains(strings.Join(warns, "\n"), "session "+want) {
			t.Errorf("no warning %q in %q", want, warns)
		}
	}
	// The clean session prints exactly as it does alone.
	var alone bytes.Buffer
	writeSessionsJSON(&alone, 1, func(int) *discover.Session { return &clean }, nil)
	elem := strings.TrimSuffix(strings.TrimPrefix(alone.String(), "[\n"), "\n]\n")
	if !strings.Contains(out.String(), elem) {
		t.Errorf("clean session changed:\n%s\nnot in\n%s", elem, out.String())
	}
}

// timeJSONOK is exactly whether time.Time.MarshalJSON succeeds.
func TestTimeJSONOKIsMarshalJSON(t *testing.T) {
	var zones []*time.Location
	for _, off := range []int{0, 1, -1, 3600, -3600, 86399, -86399, 86400, -86400, 86460, -90000, 360000, -360000, 5*3600 + 1799} {
		zones = append(zones, time.FixedZone("", off), time.FixedZone("X", off))
	}
	zones = append(zones, time.UTC, time.Local)
	for _, y := range []int{-1, 0, 1, 1970, 9999, 10000} {
		for _, z := range zones {
			for _, tm := range []time.Time{time.Date(y, 1, 1, 0, 0, 0, 0, z), time.Date(y, 12, 31, 23, 59, 59, 999, z)} {
				_, err := tm.MarshalJSON()
				if got := timeJSONOK(tm); got != (err == nil) {
					t.Errorf("timeJSONOK(%v) = %v, MarshalJSON error %v", tm, got, err)
				}
			}
		}
	}
}
