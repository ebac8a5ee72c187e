package discover

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/meta"
)

// shapedAdapter is a fake adapter whose ids have a shape (IDShaper) and that
// may be slow.
type shapedAdapter struct {
	fakeAdapter
	holds func(id string) bool
	delay time.Duration
}

func (s *shapedAdapter) MayHold(id string) bool { return s.holds(id) }
func (s *shapedAdapter) Discover(ctx context.Context, env *Env) ([]Session, error) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.fakeAdapter.Discover(ctx, env)
}

const uuidA = "0b1f4c8e-59a2-4c1e-9d55-0a1b2c3d4e5f"

func isUUIDish(id string) bool { return len(id) == 36 && strings.Count(id, "-") == 4 }
func hasColon(id string) bool  { return strings.Contains(id, ":") }

func sess(id, adapter string) Session {
	t := time.Unix(1795211000, 0)
	return Session{ID: id, Adapter: adapter, Status: StatusStopped, LastActivity: &t, Cwd: "/w"}
}

// An exact id found in one adapter does not wait for an adapter that cannot
// hold that id (a gateway that hangs): the answer comes at once, without the
// slow adapter's warning.
func TestFindForDoesNotWaitForAdapterThatCannotHoldTheID(t *testing.T) {
	fast := &shapedAdapter{fakeAdapter: fakeAdapter{name: "claude-code", ss: []Session{sess(uuidA, "claude-code")}}, holds: isUUIDish}
	slow := &shapedAdapter{fakeAdapter: fakeAdapter{name: "openclaw", ss: []Session{sess("agent:main:main", "openclaw")}, warns: []string{"gateway slow"}}, holds: hasColon, delay: time.Hour}
	start := time.Now()
	res := FindFor(context.Background(), testEnv(), []Adapter{fast, slow}, 3*time.Second, uuidA)
	if el := time.Since(start); el > time.Second {
		t.Fatalf("FindFor waited %v for an adapter that cannot hold %s", el, uuidA)
	}
	s, err := Resolve(res.Sessions, uuidA)
	if err != nil || s.Adapter != "claude-code" {
		t.Fatalf("Resolve = %+v, %v", s, err)
	}
	if len(res.Warnings) != 0 || res.Up["openclaw"] {
		t.Errorf("an adapter not waited for shows: warnings %q, up %v", res.Warnings, res.Up)
	}
}

// An adapter that may hold the exact id too, or that does not say which ids it
// holds, is waited for: it could make the answer ambiguous.
func TestFindForWaitsWhenTheAnswerCanChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		slow Adapter
	}{
		{"may hold", &shapedAdapter{fakeAdapter: fakeAdapter{name: "codex", ss: []Session{sess(uuidA, "codex")}}, holds: isUUIDish, delay: 200 * time.Millisecond}},
		{"no shape", &slowAdapter{fakeAdapter{name: "codex", ss: []Session{sess(uuidA, "codex")}}, 200 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fast := &shapedAdapter{fakeAdapter: fakeAdapter{name: "claude-code", ss: []Session{sess(uuidA, "claude-code")}}, holds: isUUIDish}
			res := FindFor(context.Background(), testEnv(), []Adapter{fast, tc.slow}, 3*time.Second, uuidA)
			_, err := Resolve(res.Sessions, uuidA)
			var am *AmbiguousError
			if !errors.As(err, &am) || len(am.Candidates) != 2 {
				t.Fatalf("Resolve = %v, want ambiguous between both adapters", err)
			}
		})
	}
}

type slowAdapter struct {
	fakeAdapter
	delay time.Duration
}

func (s *slowAdapter) Discover(ctx context.Context, env *Env) ([]Session, error) {
	time.Sleep(s.delay)
	return s.fakeAdapter.Discover(ctx, env)
}

// Whatever the adapters hold, Resolve answers the same from FindFor as from
// FindAll: the same session, or the same error with the same candidates.
func TestFindForAnswersAsFindAll(t *testing.T) {
	claude := func(ids ...string) Adapter {
		var ss []Session
		for _, id := range ids {
			ss = append(ss, sess(id, "claude-code"))
		}
		return &shapedAdapter{fakeAdapter: fakeAdapter{name: "claude-code", ss: ss}, holds: isUUIDish}
	}
	gateway := func(delay time.Duration, ids ...string) Adapter {
		var ss []Session
		for _, id := range ids {
			ss = append(ss, sess(id, "openclaw"))
		}
		return &shapedAdapter{fakeAdapter: fakeAdapter{name: "openclaw", ss: ss}, holds: hasColon, delay: delay}
	}
	pi := func(delay time.Duration, ids ...string) Adapter {
		var ss []Session
		for _, id := range ids {
			ss = append(ss, sess(id, "pi"))
		}
		return &shapedAdapter{fakeAdapter: fakeAdapter{name: "pi", ss: ss}, holds: isUUIDish, delay: delay}
	}
	uuidB := uuidA[:30] + "ffffff"
	launched := time.Unix(1795210000, 0)
	for _, tc := range []struct {
		name     string
		arg      string
		adapters []Adapter
		launches []meta.Launch
	}{
		{"exact, unique", uuidA, []Adapter{claude(uuidA), gateway(50*time.Millisecond, "agent:main:main")}, nil},
		{"exact in two adapters", uuidA, []Adapter{claude(uuidA), pi(50*time.Millisecond, uuidA)}, nil},
		{"exact wins over prefix hits", uuidA, []Adapter{claude(uuidA), pi(50*time.Millisecond, uuidA+"x")}, nil},
		{"prefix in two adapters", uuidA[:8], []Adapter{claude(uuidA), pi(50*time.Millisecond, uuidB)}, nil},
		{"prefix in one", uuidA[:8], []Adapter{claude(uuidA), gateway(50*time.Millisecond, "agent:main:main")}, nil},
		{"prefix, none", "zz", []Adapter{claude(uuidA), gateway(50*time.Millisecond, "agent:main:main")}, nil},
		{"colon prefix", "agent:", []Adapter{claude(uuidA), gateway(50*time.Millisecond, "agent:main:main", "agent:main:x")}, nil},
		{"launch record of the slow adapter names the id", uuidA, []Adapter{claude(uuidA), gateway(50 * time.Millisecond)},
			[]meta.Launch{{ID: "l-1", Adapter: "openclaw", SessionID: uuidA, LaunchedAt: launched}}},
		{"launch id", "l-1", []Adapter{claude(uuidA), gateway(50*time.Millisecond, "agent:main:main")},
			[]meta.Launch{{ID: "l-1", Adapter: "openclaw", SessionID: "agent:main:main", LaunchedAt: launched}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testEnv()
			env.Launches = tc.launches
			all := FindAll(context.Background(), env, tc.adapters, 3*time.Second, QueryFor(tc.arg, env.Launches))
			want, wantErr := Resolve(all.Sessions, tc.arg)
			got, gotErr := Resolve(FindFor(context.Background(), env, tc.adapters, 3*time.Second, tc.arg).Sessions, tc.arg)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || got.ID != want.ID || got.Adapter != want.Adapter || got.Status != want.Status {
				t.Fatalf("FindFor resolves to %s/%s %v, FindAll to %s/%s %v", got.Adapter, got.ID, gotErr, want.Adapter, want.ID, wantErr)
			}
		})
	}
}
