package main

import (
	"encoding/json"
	"testing"
)

// doctor names the models seen without a price, and only those: Claude Code
// 2.1.329's default claude-opus-5-5 has one now.
func TestDoctorListsUnpricedModels(t *testing.T) {
	home, state := fixtureHome(t)
	// doctor reads the last 7 days; the recordings are from 2026-11-20 and 21.
	env := map[string]string{"AGENTCTL_HOME": state, "HOME": home, "TEST_NOW": "2026-11-25T12:00:00Z"}
	out, stderr, _ := runCLI(t, env, "--home", home, "doctor", "--json")
	var rep struct {
		Prices pricesReport `json:"prices"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s\n%s", err, out, stderr)
	}
	got := map[string]int{}
	for _, u := range rep.Prices.Unpriced {
		got[u.Adapter+" "+u.Model] = u.Sessions
	}
	if got["codex fake-model"] == 0 || got["opencode fake/fake-model"] == 0 {
		t.Errorf("unpriced models %v; want codex fake-model and opencode fake/fake-model", got)
	}
	for k := range got {
		if k == "claude-code claude-opus-5-5" || k == "claude-code claude-opus-4-8" {
			t.Errorf("%s listed without a price", k)
		}
	}
	if rep.Prices.TableChecked == "" {
		t.Error("no price table date")
	}
}
