package main

import (
	"encoding/json"
	"testing"
)

// doctor names the models seen without a price, and only those: Claude Code
// 2.1.329's default claude-opus-5-5 has one now.
func TestDoctorListsUnpricedModels(t *testing.T) {
	home, state := fixtureHome(t)
	env := map[string]string{"AGENTCTL_HOME": state, "HOME": home}
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
