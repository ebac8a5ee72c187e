// Package openclaw is the OpenClaw adapter's read side (notes: docs/agents/openclaw.md).
//
// OpenClaw runs every session inside one gateway process, so there is no PID or
// transcript file to look at: everything comes from the gateway's WebSocket RPC
// (protocol 4), over one connection per command. The gateway's private SQLite
// files are never opened.
package openclaw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/gateway"
)

// Name is the adapter name.
const Name = "openclaw"

const (
	pageLimit = 100 // sessions.list / chat.history rows per request
	maxPages  = 50  // a cap that warns, so a runaway gateway cannot loop forever
)

// Adapter reads OpenClaw sessions.
type Adapter struct {
	// Version is sent as client.version in connect.
	Version string
	// defaultURL is where an unconfigured gateway is looked for.
	defaultURL string
}

// New returns the OpenClaw adapter.
func New() *Adapter {
	return &Adapter{Version: gateway.ClientVersion(), defaultURL: gateway.DefaultURL}
}

func (a *Adapter) Name() string { return Name }

// dial resolves the endpoint and the device identity and connects. quiet is true
// when the gateway is not configured and nothing listens: not an error at all.
func (a *Adapter) dial(ctx context.Context, env *discover.Env, methods ...string) (c conn, quiet bool, err error) {
	ep, err := gateway.Resolve(settings(env), a.defaultURL)
	if err != nil {
		return c, false, err
	}
	o := gateway.DialOptions{Endpoint: ep, Version: a.Version, Scopes: []string{gateway.ScopeRead}, Methods: methods}
	d, path, ok, derr := gateway.LoadDevice(env.StateDir)
	o.DevicePath = path
	if derr != nil {
		env.Warnf("%v; connecting with the token only", derr)
	} else if ok {
		o.Device = &d
	}
	gc, err := gateway.Dial(ctx, o)
	var ge *gateway.Error
	if err != nil && !ep.Configured() && errors.As(err, &ge) && ge.Kind == gateway.KindUnreachable {
		return c, true, err
	}
	return conn{gc}, false, err
}

// conn is one gateway connection with the adapter's paging on top.
type conn struct{ *gateway.Conn }

// settings resolves the gateway from a command's environment and agentctl's
// config, exactly as the write side does from a launch's.
func settings(env *discover.Env) gateway.Settings {
	return gateway.Settings{Getenv: env.LookupEnv, Home: env.Home, Config: env.Config,
		Warn: func(m string) { env.Warnf("%s", m) }}
}

// Discover lists every session the gateway has (all pages).
func (a *Adapter) Discover(ctx context.Context, env *discover.Env) ([]discover.Session, error) {
	c, quiet, err := a.dial(ctx, env, "sessions.list")
	if quiet {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rows, defaults, err := c.listAll(ctx, env, "")
	if err != nil && len(rows) == 0 {
		c.Abort()
		return nil, err
	}
	if err != nil {
		// Partial results, loudly: keep the pages that arrived.
		env.Warnf("%v; showing the %d sessions read before that", err, len(rows))
		c.Abort()
	} else {
		c.Close(ctx)
	}
	gw := gwInfo{url: c.URL(), version: c.ServerVersion()}
	out := make([]discover.Session, 0, len(rows))
	for _, r := range rows {
		out = append(out, toSession(r, defaults, gw))
	}
	return out, nil
}

// Detail is what `status` needs beyond a list row: the first prompt, and tokens
// and cost summed over the whole chat history. The row's own token and cost
// fields are last-run values, not lifetime totals (docs/agents/openclaw.md §3), which is why
// Discover leaves Tokens and CostUSD empty.
func (a *Adapter) Detail(ctx context.Context, env *discover.Env, s discover.Session) (discover.Session, error) {
	c, _, err := a.dial(ctx, env, "sessions.list", "chat.history")
	if err != nil {
		return s, err
	}
	ok := false
	defer func() {
		if ok {
			c.Close(ctx)
		} else {
			c.Abort()
		}
	}()
	// sessions.describe lacks hasActiveRun; a search of the list has it. search
	// is not an exact filter, so keep only the exact key.
	rows, defaults, err := c.listAll(ctx, env, s.ID)
	if err != nil {
		return s, err
	}
	gw := gwInfo{url: c.URL(), version: c.ServerVersion()}
	found := false
	for _, r := range rows {
		if r.Key == s.ID {
			fresh := toSession(r, defaults, gw)
			mergeSession(&s, fresh)
			found = true
			break
		}
	}
	if !found {
		return s, fmt.Errorf("gateway %s has no session %s", c.URL(), s.ID)
	}
	hist, err := c.history(ctx, env, s.ID, 0)
	if err != nil {
		return s, err
	}
	var tok discover.Tokens
	var cost float64
	haveCost, haveTok := false, false
	badUsage := 0
	for _, raw := range hist.rows {
		var m histRow
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		if s.Prompt == "" && m.Role == "user" {
			s.Prompt = strings.TrimSpace(discover.Clean(contentText(m.Content)))
		}
		if m.Role != "assistant" || m.Usage == nil {
			continue
		}
		if !discover.UsageOK(m.Usage.Input, m.Usage.Output, m.Usage.CacheRead, m.Usage.CacheWrite) {
			badUsage++
			continue
		}
		haveTok = true
		tok.Add(discover.Tokens{Input: m.Usage.Input, Output: m.Usage.Output, CacheRead: m.Usage.CacheRead, CacheWrite: m.Usage.CacheWrite})
		if m.Usage.Cost != nil && m.Usage.Cost.Total != nil {
			cost += *m.Usage.Cost.Total
			haveCost = true
		}
	}
	if badUsage > 0 {
		env.Warnf("session %s: %d usage record(s) with a negative or impossible token count left out of its totals", s.ID, badUsage)
	}
	if hist.truncated {
		env.Warnf("%s: history longer than %d messages; tokens and cost cover the newest %d", s.ID, maxPages*pageLimit, len(hist.rows))
	}
	if haveTok {
		s.Tokens = &tok
	}
	if haveCost {
		s.CostUSD, s.CostSource = discover.Cost(cost, tok, 0, false)
	}
	ok = true
	return s, nil
}

// mergeSession refreshes s with what the gateway says now, keeping what only
// agentctl's launch records know.
func mergeSession(s *discover.Session, fresh discover.Session) {
	keep := *s
	*s = fresh
	s.Group, s.Spec, s.Meta, s.LaunchID, s.Log = keep.Group, keep.Spec, keep.Meta, keep.LaunchID, keep.Log
	s.ExitCode = keep.ExitCode
	s.ExitReason, s.Budget = keep.ExitReason, keep.Budget // the launch record's (budget:*)
	if s.Prompt == "" {
		s.Prompt = keep.Prompt
	}
}

// listParams are exactly the documented keys (the gateway's schemas are closed).
type listParams struct {
	Limit              int    `json:"limit"`
	Offset             int    `json:"offset"`
	Search             string `json:"search,omitempty"`
	IncludeLastMessage bool   `json:"includeLastMessage"`
}

type listResult struct {
	Sessions   []json.RawMessage `json:"sessions"`
	HasMore    bool              `json:"hasMore"`
	NextOffset *int              `json:"nextOffset"`
	TotalCount *int              `json:"totalCount"`
	Defaults   listDefaults      `json:"defaults"`
}

type listDefaults struct {
	ModelProvider string `json:"modelProvider"`
	Model         string `json:"model"`
}

// listAll pages through sessions.list. On an error after the first page it
// returns the rows so far with the error.
func (c conn) listAll(ctx context.Context, env *discover.Env, search string) ([]row, listDefaults, error) {
	var rows []row
	var defaults listDefaults
	seen := map[string]bool{}
	offset := 0
	for page := 0; ; page++ {
		if page == maxPages {
			env.Warnf("gateway %s: stopped after %d pages of sessions.list (%d sessions); the rest are missing from this output", c.URL(), maxPages, len(rows))
			break
		}
		var res listResult
		if err := c.Call(ctx, "sessions.list", listParams{Limit: pageLimit, Offset: offset, Search: search, IncludeLastMessage: true}, &res); err != nil {
			return rows, defaults, err
		}
		if page == 0 {
			defaults = res.Defaults
		}
		for _, raw := range res.Sessions {
			var r row
			if err := json.Unmarshal(raw, &r); err != nil || r.Key == "" {
				env.Warnf("gateway %s: skipped a sessions.list row that does not parse", c.URL())
				continue
			}
			// Offset paging over a list sorted by update time can repeat a
			// row that moved while we paged; keep its first appearance.
			if seen[r.Key] {
				continue
			}
			seen[r.Key] = true
			rows = append(rows, r)
		}
		if !res.HasMore {
			break
		}
		if res.NextOffset == nil || *res.NextOffset <= offset {
			env.Warnf("gateway %s: sessions.list said hasMore without a usable nextOffset after %d sessions; the rest are missing from this output", c.URL(), len(rows))
			break
		}
		offset = *res.NextOffset
	}
	return rows, defaults, nil
}

// row is one sessions.list row; pointers tell absent from zero.
type row struct {
	Key               string          `json:"key"`
	SessionID         string          `json:"sessionId"`
	AgentID           string          `json:"agentId"`
	Kind              string          `json:"kind"`
	Status            string          `json:"status"`
	HasActiveRun      *bool           `json:"hasActiveRun"`
	ActiveRunIDs      json.RawMessage `json:"activeRunIds"`
	AbortedLastRun    bool            `json:"abortedLastRun"`
	LastRunID         string          `json:"lastRunId"`
	Archived          bool            `json:"archived"`
	CreatedAt         *float64        `json:"createdAt"`
	UpdatedAt         *float64        `json:"updatedAt"`
	LastInteractionAt *float64        `json:"lastInteractionAt"`
	LastActivityAt    *float64        `json:"lastActivityAt"`
	EndedAt           *float64        `json:"endedAt"`
	InputTokens       *int64          `json:"inputTokens"`
	OutputTokens      *int64          `json:"outputTokens"`
	ContextTokens     *int64          `json:"contextTokens"`
	EstimatedCostUSD  *float64        `json:"estimatedCostUsd"`
	ModelProvider     string          `json:"modelProvider"`
	Model             string          `json:"model"`
	DerivedTitle      string          `json:"derivedTitle"`
	DisplayName       string          `json:"displayName"`
	Label             string          `json:"label"`
	LastMessage       string          `json:"lastMessagePreview"`
	ParentSessionKey  string          `json:"parentSessionKey"`
	SpawnedCwd        string          `json:"spawnedCwd"`
	Worktree          *struct {
		RepoRoot string `json:"repoRoot"`
	} `json:"worktree"`
}

type gwInfo struct{ url, version string }

// rowStatus maps a row to a status and its detail (docs/agents/openclaw.md §4). It never
// looks at update times: a session is running exactly when the gateway says a
// run is active.
func rowStatus(r row) (status, detail string) {
	switch {
	case r.HasActiveRun != nil && *r.HasActiveRun:
		if r.Status == "queued" {
			return discover.StatusRunning, "queued"
		}
		return discover.StatusRunning, "active run"
	case r.HasActiveRun == nil && (r.Status == "running" || r.Status == "queued"):
		if r.Status == "queued" {
			return discover.StatusRunning, "queued"
		}
		return discover.StatusRunning, "run status running"
	case r.HasActiveRun == nil:
		// Neither field proves anything about an active run.
		if r.Status == "" {
			return discover.StatusUnknown, "gateway row has neither hasActiveRun nor status"
		}
	case r.Status == "running" || r.Status == "queued":
		// hasActiveRun false contradicts the run status: say so, do not pick.
		return discover.StatusUnknown, fmt.Sprintf("gateway row says status %s but hasActiveRun false", r.Status)
	}
	switch r.Status {
	case "failed", "timeout":
		return discover.StatusFailed, "last run " + r.Status
	case "done":
		if r.Archived {
			return discover.StatusStopped, "last run done, archived"
		}
		return discover.StatusStopped, "last run done"
	case "killed":
		return discover.StatusStopped, "last run killed (aborted)"
	case "":
		if r.Archived {
			return discover.StatusStopped, "archived"
		}
		return discover.StatusStopped, "never run"
	}
	if r.HasActiveRun == nil {
		return discover.StatusUnknown, "unknown run status " + r.Status
	}
	return discover.StatusStopped, "last run " + r.Status
}

func toSession(r row, d listDefaults, gw gwInfo) discover.Session {
	st, detail := rowStatus(r)
	s := discover.Session{
		ID:             r.Key,
		Adapter:        Name,
		Status:         st,
		Evidence:       discover.EvidenceGateway,
		EvidenceDetail: detail,
		Model:          joinModel(r.ModelProvider, r.Model),
		AgentVersion:   gw.version,
		StartedAt:      msTime(r.CreatedAt),
	}
	if s.Model == "" {
		s.Model = joinModel(d.ModelProvider, d.Model)
	}
	for _, t := range []string{r.DerivedTitle, r.DisplayName, r.Label} {
		if t = discover.OneLine(t, 0); t != "" {
			s.Title = t
			break
		}
	}
	s.LastActivity = latest(r.LastActivityAt, r.LastInteractionAt, r.EndedAt)
	if s.LastActivity == nil {
		s.LastActivity = msTime(r.UpdatedAt)
	}
	if st != discover.StatusRunning {
		s.EndedAt = msTime(r.EndedAt)
	}
	switch {
	case r.SpawnedCwd != "":
		s.Cwd = r.SpawnedCwd
	case r.Worktree != nil && r.Worktree.RepoRoot != "":
		s.Cwd = r.Worktree.RepoRoot
	}
	x := map[string]any{"gateway": gw.url}
	put := func(k string, v any, ok bool) {
		if ok {
			x[k] = v
		}
	}
	put("session_id", r.SessionID, r.SessionID != "")
	put("agent_id", r.AgentID, r.AgentID != "")
	put("kind", r.Kind, r.Kind != "")
	put("run_status", r.Status, r.Status != "")
	put("last_run_id", r.LastRunID, r.LastRunID != "")
	put("parent_session_key", r.ParentSessionKey, r.ParentSessionKey != "")
	put("archived", true, r.Archived)
	put("last_message", discover.OneLine(r.LastMessage, 200), r.LastMessage != "")
	if ids, ok := activeRunIDs(r.ActiveRunIDs); ok && len(ids) > 0 {
		x["active_run_ids"] = ids
	}
	// Last-run / current-context figures, labelled as such: not lifetime totals.
	if r.InputTokens != nil || r.OutputTokens != nil {
		x["last_run_tokens"] = map[string]int64{"input": deref(r.InputTokens), "output": deref(r.OutputTokens)}
	}
	if r.EstimatedCostUSD != nil {
		x["last_run_cost_usd"] = *r.EstimatedCostUSD
	}
	if r.ContextTokens != nil {
		x["context_tokens"] = *r.ContextTokens
	}
	s.Extra = x
	return s
}

// activeRunIDs: an array is the exact set; null or absent means "not disclosed".
func activeRunIDs(raw json.RawMessage) ([]string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false
	}
	var ids []string
	if json.Unmarshal(raw, &ids) != nil {
		return nil, false
	}
	return ids, true
}

func joinModel(provider, model string) string {
	switch {
	case model == "":
		return ""
	case provider == "" || strings.HasPrefix(model, provider+"/"):
		return model
	}
	return provider + "/" + model
}

func msTime(ms *float64) *time.Time {
	if ms == nil || *ms <= 0 {
		return nil
	}
	t := time.UnixMilli(int64(*ms)).UTC()
	return &t
}

func latest(ms ...*float64) *time.Time {
	var best *time.Time
	for _, m := range ms {
		if t := msTime(m); t != nil && (best == nil || t.After(*best)) {
			best = t
		}
	}
	return best
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// MayHold reports whether a session can have this id: a session's id is its
// key, agent:<agentId>:<name> (docs/agents/openclaw.md §1), so an exact id
// without a colon (another agent's UUID) resolves without waiting for the
// gateway (discover.FindFor).
func (a *Adapter) MayHold(id string) bool { return strings.Contains(id, ":") }
