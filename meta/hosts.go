package meta

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// HostEntry is one element of config `hosts`: an ssh destination as a string
// ("gpu", "me@build.example"), or {"host": "gpu", "agentctl": "/opt/bin/agentctl"}
// when agentctl is not on that host's PATH for non-interactive ssh sessions.
type HostEntry struct {
	Host     string `json:"host"`
	Agentctl string `json:"agentctl,omitempty"`
}

// UnmarshalJSON takes both forms.
func (h *HostEntry) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		h.Agentctl = ""
		return json.Unmarshal(b, &h.Host)
	}
	type plain HostEntry
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("hosts: want \"destination\" or {\"host\": …, \"agentctl\": …}: %w", err)
	}
	if p.Host == "" {
		return fmt.Errorf("hosts: an entry without \"host\"")
	}
	*h = HostEntry(p)
	return nil
}
