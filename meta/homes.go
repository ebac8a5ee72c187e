package meta

import (
	"slices"
	"time"
)

// HomesFile lists the other state dirs launches used: `launch --home DIR`
// without AGENTCTL_HOME keeps its records in DIR/.agentctl, where a plain
// `sweep` would never look, so the launch notes that dir here, in the default
// state dir, and a plain sweep sweeps every dir listed (README "sweep").
const HomesFile = "homes.json"

// Homes is homes.json.
type Homes struct {
	Schema int         `json:"schema"`
	Homes  []OtherHome `json:"homes"`
}

// OtherHome is one state dir a launch used, with the --home it came from.
type OtherHome struct {
	Home  string    `json:"home"`
	State string    `json:"state"`
	Added time.Time `json:"added"`
}

// AddHome notes state (the state dir of --home home); noting it again changes
// nothing.
func (s *Store) AddHome(home, state string) error {
	return Update(s, HomesFile, func(h *Homes) (bool, error) {
		if slices.ContainsFunc(h.Homes, func(o OtherHome) bool { return o.State == state }) {
			return false, nil
		}
		h.Schema = Schema
		h.Homes = append(h.Homes, OtherHome{Home: home, State: state, Added: s.now().UTC()})
		return true, nil
	})
}

// ReadHomes lists the noted state dirs.
func (s *Store) ReadHomes() ([]OtherHome, error) {
	var h Homes
	err := s.Read(HomesFile, &h)
	return h.Homes, err
}

// DropHome forgets state (its dir is gone, or it has no launch records left).
func (s *Store) DropHome(state string) error {
	return Update(s, HomesFile, func(h *Homes) (bool, error) {
		n := len(h.Homes)
		h.Homes = slices.DeleteFunc(h.Homes, func(o OtherHome) bool { return o.State == state })
		return len(h.Homes) != n, nil
	})
}
