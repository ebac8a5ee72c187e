// Package opencode is the OpenCode adapter's read side (notes: docs/agents/opencode.md).
//
// OpenCode ≥ 1.2 keeps everything in one SQLite database in WAL mode
// (<data>/opencode.db); ≤ 1.1 kept a JSON tree under <data>/storage, which may
// still hold sessions the one-time import skipped. Both are read, read-only; the
// database wins for an id present in both.
//
// Liveness: `opencode run` holds no per-session file, lock or socket, so a session
// is alive only on process evidence: agentctl's launch records (folded in by the
// core), `opencode run --session <id>`, or a unique opencode process in the
// session's directory started before its open turn's prompt (inferred). Update
// times are never evidence (docs/agents/opencode.md §4.1).
package opencode

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/discover/index"
	"github.com/agentctl/agentctl/internal/sqlitero"
	"github.com/agentctl/agentctl/proc"
)

// Name is the adapter name.
const Name = "opencode"

// Adapter reads OpenCode sessions.
type Adapter struct {
	// StartTime dates a process of the snapshot (wall clock). nil: the process
	// table's own StartTime method if it has one, else the platform's conversion
	// (Linux: btime + ticks/CLK_TCK). Tests inject a fixed one.
	StartTime func(proc.Process) (time.Time, bool)
}

// New returns the OpenCode adapter.
// ParsesFiles marks a listing as work on this machine's files (discover.FileParser).
func (*Adapter) ParsesFiles() {}

func New() *Adapter { return &Adapter{} }

// Name is the adapter name.
func (a *Adapter) Name() string { return Name }

func (a *Adapter) startTime(env *discover.Env) func(proc.Process) (time.Time, bool) {
	if a.StartTime != nil {
		return a.StartTime
	}
	return func(p proc.Process) (time.Time, bool) { return env.Procs.StartTime(p.PID) }
}

// Discover lists every session of OpenCode's stores with its status. With
// env.OnlyAlive and no opencode process alive, nothing but agentctl's launch
// records can make a session alive (alive.go): only their sessions are read.
func (a *Adapter) Discover(ctx context.Context, env *discover.Env) ([]discover.Session, error) {
	if env.OnlyAlive {
		if q, ok := a.aliveQuery(env); ok {
			if len(q.IDs) == 0 {
				return nil, nil
			}
			return a.collect(ctx, env, &q)
		}
	}
	return a.collect(ctx, env, nil)
}

// Find returns the sessions q names, exactly as Discover lists them: the
// databases are queried for those ids only. A session's status depends on the
// others only through an inferred process tie (a process is tied to an open
// session only when it could serve no other): when a found session has such a
// candidate process, Find lists everything and picks from that.
func (a *Adapter) Find(ctx context.Context, env *discover.Env, q discover.Query) ([]discover.Session, error) {
	return a.collect(ctx, env, &q)
}

// collect lists the sessions q names (nil: all).
func (a *Adapter) collect(ctx context.Context, env *discover.Env, q *discover.Query) ([]discover.Session, error) {
	data := dataDir(env)
	dbs := dbPaths(env, data)
	storage := filepath.Join(data, "storage")
	legacy := isDir(filepath.Join(storage, "session"))
	if len(dbs) == 0 && !legacy {
		return nil, nil // OpenCode never ran here (or with another data dir)
	}

	// The opencode processes, read once: the legacy tree's listing needs them
	// when its budget gives up (legacyMustRead), the verdicts always.
	scan := sync.OnceValues(func() ([]ocProc, bool) {
		// Processes agentctl launched for a known session are the core's to
		// report (launch records); they must not also be matched to some
		// other session.
		skip := map[int]bool{}
		for _, l := range env.LaunchesFor(Name) {
			if l.CurrentSessionID() == "" {
				continue
			}
			if proc.Check(env.Procs, l.Agent()).Alive {
				skip[l.PID] = true
			}
		}
		if env.Procs == nil {
			return nil, false
		}
		return scanProcs(env, a.startTime(env), skip)
	})

	var recs []record
	seen := map[string]bool{}
	add := func(rs []record) {
		keep := rs[:0] // in place: the first store's records need no copy
		for _, r := range rs {
			if !seen[r.ID] {
				seen[r.ID] = true
				keep = append(keep, r)
			}
		}
		if recs == nil {
			recs = keep
		} else {
			recs = append(recs, keep...)
		}
	}
	var errs []error
	sources := 0
	for _, p := range dbs {
		var got []record
		note, err := sqlitero.Read(ctx, p, func(ctx context.Context, db *sql.DB) error {
			var err error
			got, err = listDB(ctx, db, p, q, env.Slots)
			return err
		})
		if note != "" {
			env.Warnf("%s", note)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", p, err))
			continue
		}
		sources++
		add(got)
	}
	if legacy {
		// The index holds one entry per session: loading it costs what the
		// whole history costs. A lookup reads its few sessions' files instead,
		// and indexes nothing it does not show.
		cache := env.CacheDir()
		if q != nil {
			cache = ""
		}
		ix := index.Load[*legacyEntry](cache, Name+"-legacy", legacyIndexVersion)
		procs, _ := scan()
		got, err := listLegacy(ctx, storage, ix, q, env.Warnf, legacyMustRead(env, procs))
		if err == nil && q == nil {
			ix.PruneUnseen(storage + string(filepath.Separator))
		}
		if err := ix.Save(); err != nil {
			env.Warnf("%v", err)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", storage, err))
		} else {
			sources++
			add(got)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if sources == 0 {
		return nil, errors.Join(errs...)
	}
	for _, err := range errs {
		env.Warnf("%v; its sessions are missing from this output", err)
	}
	for i := range recs {
		r := &recs[i]
		if r.BadUsage > 0 {
			env.Warnf("session %s: %d message(s) with a negative or impossible token count left out of its totals (%s)", r.ID, r.BadUsage, r.Path)
		}
		if r.Tokens != nil && r.Tokens.negative() {
			r.Tokens = nil
			env.Warnf("session %s: the store's token totals are negative; left out (%s)", r.ID, r.Path)
		}
	}
	if len(recs) == 0 {
		return nil, nil
	}

	procs, procsOK := scan()
	if q != nil && procsOK {
		for _, r := range recs {
			if turn, _ := turnOf(r.Last); (turn == discover.OutcomeOpen || turn == discover.OutcomeUnknown) && len(candidatesFor(r, procs)) > 0 {
				// Whether that process is tied to it depends on the other sessions.
				all, err := a.collect(ctx, env, nil)
				var out []discover.Session
				for _, s := range all {
					if q.Match(s.ID) {
						out = append(out, s)
					}
				}
				return out, err
			}
		}
	}
	verdicts := judge(recs, procs, procsOK)
	for i, r := range recs {
		if turn, detail := turnOf(r.Last); turn == discover.OutcomeOpen {
			if v, ok := claimVerdict(r, procs, verdicts[i], detail); ok {
				verdicts[i] = v
			}
		}
	}
	if procsOK {
		// A server's own answer is exact: it outranks the inference above.
		if dirs := openDirs(recs, procs); len(dirs) > 0 {
			srv, silent, answered := askServers(ctx, procs, dirs)
			for i, r := range recs {
				if turn, detail := turnOf(r.Last); turn == discover.OutcomeOpen || turn == discover.OutcomeUnknown {
					ss, ok := srv[r.ID]
					if v, ok := serverVerdict(ss, ok, detail); ok {
						verdicts[i] = v
					} else if v, ok := notRunning(r, procs, answered, detail); ok && turn == discover.OutcomeOpen {
						verdicts[i] = v
					} else if v, ok := busyServer(r, recs, procs, silent, detail); ok && verdicts[i].Status == discover.StatusUnknown {
						verdicts[i] = v
					} else if verdicts[i].Status == discover.StatusUnknown && len(silent) > 0 {
						msgs := make([]string, 0, len(silent))
						for _, m := range silent {
							msgs = append(msgs, m)
						}
						sort.Strings(msgs)
						verdicts[i].Detail += "; " + strings.Join(msgs, "; ")
					}
				}
			}
		}
	}

	out := make([]discover.Session, 0, len(recs))
	for i := range recs {
		out = append(out, toSession(recs[i], verdicts[i]))
		recs[i] = record{} // what the session does not keep can go now
	}
	return out, nil
}

// defaultTitle matches the placeholder OpenCode stores until its small model has
// written a title; a killed or failed session keeps it. It is not a title.
var defaultTitle = regexp.MustCompile(`^(New|Child) session - \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$`)

func toSession(r record, v discover.Verdict) discover.Session {
	s := discover.Session{ID: r.ID, Adapter: Name, Cwd: r.Dir, AgentVersion: r.Version, Path: r.Path}
	extra := map[string]any{}
	if defaultTitle.MatchString(r.Title) {
		extra["default_title"] = r.Title
	} else {
		s.Title = r.Title
	}
	if r.Prompt != nil {
		s.Prompt = *r.Prompt
	}
	model := r.Model
	if model.Provider == "" && model.ID == "" {
		model = modelRef{Provider: r.Last.Provider, ID: r.Last.ModelID}
	}
	s.Model = model.String()
	if model.Variant != "" && model.Variant != "default" {
		extra["model_variant"] = model.Variant
	}
	s.StartedAt, s.LastActivity = discover.MilliOrNil(r.Created), discover.MilliOrNil(r.Updated)
	v.Apply(&s) // a session that is not alive ended at its last activity…
	if !discover.Alive(s.Status) && r.Last.Role == "assistant" && r.Last.Completed > 0 {
		t := time.UnixMilli(r.Last.Completed).UTC() // …or when its last reply completed
		s.EndedAt = &t
	}
	if r.Tokens != nil {
		s.Slots = r.Slots
		// OpenCode's classes are disjoint; reasoning is billed as output.
		s.Tokens = &discover.Tokens{Input: r.Tokens.Input, Output: r.Tokens.Output + r.Tokens.Reasoning,
			CacheRead: r.Tokens.CacheRead, CacheWrite: r.Tokens.CacheWrite}
		if r.Tokens.Reasoning > 0 {
			extra["tokens_reasoning"] = r.Tokens.Reasoning
		}
	}
	if r.Cost != nil && s.Tokens != nil {
		// OpenCode writes 0 when its provider config has no price: not reported.
		s.CostUSD, s.CostSource = discover.Cost(*r.Cost, *s.Tokens, 0, false)
	}
	if r.Worktree != "" {
		extra["project"] = r.Worktree
	}
	if r.ProjectID != "" {
		extra["project_id"] = r.ProjectID
	}
	if r.ParentID != "" {
		extra["parent_id"] = r.ParentID // a sub-agent's session
	}
	if r.Archived > 0 {
		extra["archived_at"] = time.UnixMilli(r.Archived).UTC().Format(time.RFC3339)
	}
	if r.Agent != "" {
		extra["opencode_agent"] = r.Agent // OpenCode's own agent (build, plan, …)
	}
	if r.Slug != "" {
		extra["slug"] = r.Slug
	}
	if r.Legacy {
		extra["store"] = "legacy storage/ tree"
	}
	if len(extra) > 0 {
		s.Extra = extra
	}
	return s
}

// Peek returns the last n items of a session (n <= 0: all).
func (a *Adapter) Peek(ctx context.Context, env *discover.Env, s discover.Session, n int) ([]discover.Message, error) {
	var msgs []nativeMsg
	var v2rows []v2Row
	found := false
	// The store the listing found it in first; else every store (a session known
	// only from a launch record so far).
	var dbs, trees []string
	switch {
	case s.Path != "" && strings.HasSuffix(s.Path, ".json"):
		trees = []string{legacyStorage(s.Path)}
	case s.Path != "":
		dbs = []string{s.Path}
	default:
		data := dataDir(env)
		dbs = dbPaths(env, data)
		trees = []string{filepath.Join(data, "storage")}
	}
	for _, p := range dbs {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		_, err := sqlitero.Read(ctx, p, func(ctx context.Context, db *sql.DB) error {
			var err error
			// A few more than n: a message that yields no item (unknown role,
			// unparsable) must not leave peek short. lastN trims the items.
			limit := n
			if n > 0 {
				limit = n + 5
			}
			// OpenCode 2's row wins over the 1.x copy it migrated from.
			if v2rows, found, err = peekV2(ctx, db, s.ID, limit); found || err != nil {
				return err
			}
			msgs, found, err = peekDB(ctx, db, s.ID, limit)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		if found {
			break
		}
	}
	for _, t := range trees {
		if found {
			break
		}
		if !isDir(filepath.Join(t, "message", s.ID)) {
			continue
		}
		var err error
		if msgs, err = peekLegacy(ctx, t, s.ID, n); err != nil {
			return nil, err
		}
		found = true
	}
	// -n counts items: one message may have made two (its text and its error).
	its := discover.LastN(append(itemsV2(v2rows), items(msgs)...), n)
	if len(its) == 0 {
		return nil, discover.ErrNoSession
	}
	return its, nil
}
