package discover

import (
	"context"
	"sort"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/meta"
	"github.com/agentctl/agentctl/proc"
)

// ApplyLaunches folds agentctl's launch records into the adapters' sessions. A
// verified live launch PID is the strongest evidence there is, so it makes the
// session live (keeping the adapter's idle/waiting sub-state); a launched session
// whose agent has not written anything yet still appears. Records only add what
// agentctl itself knows (group, spec, meta, exit code); they never turn a session
// the adapter proved alive into a dead one. Only adapters that answered (up) get
// records synthesised, so a timed-out adapter does not produce half-known rows.
func ApplyLaunches(env *Env, sessions []Session, adapters []string, upIn map[string]bool) []Session {
	l := &Listing{chunks: []chunk{{ss: sessions}}}
	l.applyLaunches(env, adapters, upIn)
	if len(l.chunks) > 1 {
		sessions = append(sessions, l.chunks[1].ss...)
	}
	return sessions
}

// applyLaunches is ApplyLaunches over a listing's chunks; synthesised sessions go
// to a chunk of their own, after the others.
func (ls *Listing) applyLaunches(env *Env, adapters []string, upIn map[string]bool) {
	want := map[string]bool{}
	up := map[string]bool{}
	for k, v := range upIn {
		up[k] = v
	}
	for _, a := range adapters {
		want[a] = true
		for _, sub := range agents.SubsOf(a) {
			want[sub] = true
			up[sub] = up[a]
		}
	}
	recs := append([]meta.Launch(nil), env.Launches...)
	// Index only the sessions some record names: a listing holds tens of
	// thousands, and launch records are few.
	named := make(map[string]bool, len(recs))
	for _, l := range recs {
		if sid := l.CurrentSessionID(); sid != "" {
			named[sid] = true
		}
	}
	idx := map[string]sref{}
	if len(named) > 0 {
		for c := range ls.chunks {
			for i := range ls.chunks[c].len() {
				r := sref{int32(c), int32(i)}
				if named[ls.id(r)] {
					idx[ls.at(r).Adapter+"\x00"+ls.id(r)] = r
				}
			}
		}
	}
	synth := -1 // the chunk of synthesised sessions
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].LaunchedAt.Before(recs[j].LaunchedAt) })
	for _, l := range recs {
		sid := l.CurrentSessionID()
		if !want[l.Adapter] || sid == "" {
			continue
		}
		v := proc.Check(env.Procs, l.Agent())
		alive, known, detail := v.Alive, v.Known, v.Detail
		if known && l.PID > 0 {
			detail = "launch record " + detail
		}
		r, ok := idx[l.Adapter+"\x00"+sid]
		if !ok {
			if !up[l.Adapter] {
				continue
			}
			if synth < 0 {
				synth = len(ls.chunks)
				ls.chunks = append(ls.chunks, chunk{})
			}
			t := l.LaunchedAt
			ls.chunks[synth].ss = append(ls.chunks[synth].ss, Session{
				ID: sid, Adapter: l.Adapter, Cwd: l.Cwd, Model: l.Model, Prompt: l.Prompt,
				StartedAt: &t, LastActivity: &t, Status: StatusStopped, Evidence: EvidenceLaunchRecord,
			})
			r = sref{int32(synth), int32(len(ls.chunks[synth].ss) - 1)}
			idx[l.Adapter+"\x00"+sid] = r
		}
		s := ls.edit(r)
		s.LaunchID = l.ID
		s.Log = l.Log
		if l.Group != "" {
			s.Group = l.Group
		}
		if l.Spec != "" {
			s.Spec = l.Spec
		}
		if len(l.Meta) > 0 {
			s.Meta = l.Meta
		}
		if s.Cwd == "" {
			s.Cwd = l.Cwd
		}
		if s.Prompt == "" && l.Kind != "resume" {
			s.Prompt = l.Prompt
		}
		if s.Model == "" {
			s.Model = l.Model
		}
		s.Budget = l.Budget
		s.ExitReason = l.ExitReason
		switch {
		case l.Input != "":
			s.Kind = KindKeptOpen
		case s.Kind == KindKeptOpen:
			s.Kind = "" // a later run of the session (a resume) was not kept open
		}
		switch {
		case alive:
			if !Alive(s.Status) || s.Status == StatusUnknown {
				s.Status = StatusRunning
			}
			s.Evidence = EvidenceLaunchRecord
			s.EvidenceDetail = detail
			s.Inferred = false
			s.PID = l.PID
			s.EndedAt, s.ExitCode = nil, nil
		case !known:
			// No process table: say unknown unless the adapter had its own proof.
			if s.Evidence == EvidenceLaunchRecord || s.Evidence == EvidenceNone || s.Evidence == "" {
				s.Status, s.Evidence, s.EvidenceDetail = StatusUnknown, EvidenceLaunchRecord, detail
			}
		default:
			if Alive(s.Status) && !s.Inferred && provesLife(s.Evidence) {
				continue // the adapter proved the session alive on its own (e.g. resumed by hand)
			}
			s.PID = 0
			if l.EndedAt != nil {
				e := *l.EndedAt
				s.EndedAt = &e
			}
			if l.ExitCode != nil {
				c := *l.ExitCode
				s.ExitCode = &c
			}
			failed := (l.ExitCode != nil && *l.ExitCode != 0 && l.StopRequested == nil) || (l.Failure != "" && l.StopRequested == nil)
			switch {
			case failed:
				s.Status = StatusFailed
			case s.Status == StatusFailed && l.StopRequested == nil:
				// keep the adapter's failure signal
			default:
				s.Status = StatusStopped
			}
			s.Evidence = EvidenceLaunchRecord
			s.Inferred = false
			s.EvidenceDetail = detail
			if l.Failure != "" {
				s.EvidenceDetail = detail + "; " + l.Failure
			}
			if l.StopRequested != nil {
				s.EvidenceDetail = detail + "; stopped by agentctl"
			}
			if b := l.Breach; b != nil {
				s.EvidenceDetail = detail + "; stopped by agentctl for its budget: " + b.Used + " > " + b.Limit
			}
		}
	}
}

// provesLife reports whether an adapter's evidence is proof of a live process on
// its own (as opposed to an inference a dead launch record outweighs).
func provesLife(evidence string) bool {
	switch evidence {
	case EvidenceRegistry, EvidenceArgv, EvidenceGateway, EvidenceServer:
		return true
	}
	return false
}

// AtHome is env reading the agents' files under home instead (`--home DIR`, or
// the home a launch record was launched with): HOME is home, and the XDG dirs
// that default from it are unset. "" is env itself (a record launched
// without --home).
func (e *Env) AtHome(home string) *Env {
	if home == "" {
		return e
	}
	c := *e
	c.Home = home
	getenv := e.Getenv
	c.Getenv = func(k string) string {
		switch k {
		case "HOME":
			return home
		case "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME":
			return ""
		}
		if getenv == nil {
			return ""
		}
		return getenv(k)
	}
	return &c
}

// addRecordHomes adds the sessions of the launch records in env that were
// launched under another home than the one env reads (`launch --home DIR`,
// read without --home or with another one): agentctl's state stays in one
// place, but such a run's own files are under its record's home, so they are
// looked up there — only those sessions, and only by the adapters that read
// them — into a chunk of their own, which applyLaunches then folds the records
// into (a session of the same id under env's home stays as it is). What that
// lookup cannot read, it passes over quietly: the record alone still shows
// the run.
func (ls *Listing) addRecordHomes(ctx context.Context, env *Env, adapters []Adapter, timeout time.Duration) {
	type want struct {
		ids     []string
		readers map[string]bool
	}
	byHome := map[string]*want{}
	for _, l := range env.Launches {
		sid := l.CurrentSessionID()
		if l.Home == "" || l.Home == env.Home || sid == "" {
			continue
		}
		w := byHome[l.Home]
		if w == nil {
			w = &want{readers: map[string]bool{}}
			byHome[l.Home] = w
		}
		w.ids = append(w.ids, sid)
		w.readers[agents.ReaderOf(l.Adapter)] = true
	}
	homes := make([]string, 0, len(byHome))
	for h := range byHome {
		homes = append(homes, h)
	}
	sort.Strings(homes)
	var found []Session
	for _, h := range homes {
		w := byHome[h]
		var ad []Adapter
		for _, a := range adapters {
			if w.readers[a.Name()] {
				ad = append(ad, a)
			}
		}
		if len(ad) == 0 {
			continue
		}
		henv := env.AtHome(h).WithWarn(nil)
		henv.Launches, henv.OnlyAlive = nil, false // the records are applied once, by the caller
		_, hls := gatherFor(ctx, henv, ad, timeout, &Query{IDs: w.ids}, "", false)
		found = append(found, hls.Sessions()...)
	}
	if len(found) > 0 {
		ls.chunks = append(ls.chunks, chunk{ss: found})
	}
}

// For is the Env that reads s's own files: e itself, or, for a session of a
// `launch --home DIR` run read from another home, e at the home its launch
// record keeps (AtHome). A one-session command (peek, status's details, stop,
// resume) acts through it, as the listing found the session through it.
func (e *Env) For(s Session) *Env {
	if s.LaunchID == "" {
		return e
	}
	for _, l := range e.Launches {
		if l.ID == s.LaunchID && l.Home != "" && l.Home != e.Home {
			return e.AtHome(l.Home)
		}
	}
	return e
}
