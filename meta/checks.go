package meta

import "time"

// ChecksFile keeps the last `compare --check` results of each group's slots,
// beside the launch records and expiring with them (README "Picking the winner").
const ChecksFile = "checks.json"

// Checks is the content of checks.json.
type Checks struct {
	Schema  int           `json:"schema"`
	Records []CheckRecord `json:"checks"`
}

// CheckRecord is the last checks run in one slot's worktree.
type CheckRecord struct {
	Group     string `json:"group"`
	Branch    string `json:"branch"`
	SessionID string `json:"session_id,omitempty"`
	// Head and Tree are what was checked: the worktree's HEAD commit and the
	// tree of its whole content (HEAD plus uncommitted changes, untracked
	// files included); a later compare marks the results stale when the
	// worktree's content differs.
	Head    string        `json:"head"`
	Tree    string        `json:"tree"`
	At      time.Time     `json:"at"`
	Results []CheckResult `json:"results"`
}

// CheckResult is one --check command's outcome in one worktree.
type CheckResult struct {
	Command    string `json:"command"`
	ExitCode   *int   `json:"exit_code"` // null: killed by the timeout, or not started
	Passed     bool   `json:"passed"`
	DurationMS int64  `json:"duration_ms"`
	OutputTail string `json:"output_tail"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	Error      string `json:"error,omitempty"` // could not run at all
}

// UpdateChecks is Update on checks.json; records older than the launch TTL go.
func (s *Store) UpdateChecks(fn func(*Checks) (bool, error)) error {
	return Update(s, ChecksFile, func(c *Checks) (bool, error) {
		changed, err := fn(c)
		if err != nil {
			return false, err
		}
		now, ttl := s.now(), s.launchTTL()
		kept := c.Records[:0]
		for _, r := range c.Records {
			if now.Sub(r.At) > ttl {
				changed = true
				continue
			}
			kept = append(kept, r)
		}
		c.Records = kept
		if changed {
			c.Schema = Schema
		}
		return changed, nil
	})
}

// ReadChecks returns the kept check records without locking.
func (s *Store) ReadChecks() ([]CheckRecord, error) {
	var c Checks
	if err := s.Read(ChecksFile, &c); err != nil {
		return nil, err
	}
	return c.Records, nil
}
