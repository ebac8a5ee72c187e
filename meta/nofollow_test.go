package meta_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/meta"
	"github.com/google/go-cmp/cmp"
)

// A symbolic link where a state file should be is never written, chmodded or
// created through: it is moved aside and a regular file takes its place
// (issue 34 item 6).
func TestStateFileSymlinksNotFollowed(t *testing.T) {
	cases := []struct {
		name string
		link string // the state file that is a link
		do   func(s *meta.Store) error
	}{
		{"lock file", "launches.json.lock", func(s *meta.Store) error {
			unlock, err := s.Lock("launches.json")
			if err == nil {
				unlock()
			}
			return err
		}},
		{"journal", meta.EventsFile, func(s *meta.Store) error {
			return s.AppendEvent(meta.Event{Type: meta.EventLaunched, SessionID: "s1"})
		}},
		{"journal lock", meta.EventsFile + ".lock", func(s *meta.Store) error {
			return s.AppendEvent(meta.Event{Type: meta.EventLaunched, SessionID: "s1"})
		}},
		{"log", "logs/fuses.log", func(s *meta.Store) error {
			f, err := meta.OpenAppend(s.Path("logs/fuses.log"), s.Warn)
			if err != nil {
				return err
			}
			_, err = f.WriteString("line\n")
			f.Close()
			return err
		}},
	}
	for _, c := range cases {
		for _, dangling := range []bool{false, true} {
			name := c.name
			if dangling {
				name += " dangling"
			}
			t.Run(name, func(t *testing.T) {
				s := newStore(t)
				var warns []string
				s.Warn = func(f string, a ...any) { warns = append(warns, f) }
				if err := os.MkdirAll(filepath.Dir(s.Path(c.link)), 0o700); err != nil {
					t.Fatal(err)
				}
				target := filepath.Join(t.TempDir(), "victim")
				if !dangling {
					if err := os.WriteFile(target, []byte("precious\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Symlink(target, s.Path(c.link)); err != nil {
					t.Fatal(err)
				}
				if err := c.do(s); err != nil {
					t.Fatal(err)
				}
				st, err := os.Stat(target)
				switch {
				case dangling && !errors.Is(err, os.ErrNotExist):
					t.Errorf("dangling link's target was created (err %v)", err)
				case !dangling && err != nil:
					t.Fatal(err)
				case !dangling:
					if st.Mode().Perm() != 0o644 {
						t.Errorf("target chmodded to %v through the link", st.Mode().Perm())
					}
					b, _ := os.ReadFile(target)
					if diff := cmp.Diff("precious\n", string(b)); diff != "" {
						t.Errorf("target written through the link (-want +got):\n%s", diff)
					}
				}
				lst, err := os.Lstat(s.Path(c.link))
				if err != nil || !lst.Mode().IsRegular() {
					t.Errorf("%s is not a regular file now: %v %v", c.link, lst, err)
				}
				asides, _ := filepath.Glob(s.Path(c.link) + ".symlink-*")
				if len(asides) != 1 || len(warns) == 0 || !strings.Contains(warns[0], "symbolic link") {
					t.Errorf("link not moved aside with a warning: asides %v, warnings %q", asides, warns)
				}
			})
		}
	}
}

// A journal whose last line was torn (disk full, crash) takes the next
// append on a line of its own: the new event is read back, the fragment is
// one skipped line (issue 34 item 8).
func TestAppendEventAfterTornLine(t *testing.T) {
	s := newStore(t)
	if err := s.AppendEvent(meta.Event{Type: meta.EventLaunched, SessionID: "before"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(s.Path(meta.EventsFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"type":"session.stopped","sess`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := s.AppendEvent(meta.Event{Type: meta.EventStopped, SessionID: "after"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := s.ReadEvents(func(ev meta.Event, _ []byte) bool {
		got = append(got, ev.SessionID)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"before", "after"}, got); diff != "" {
		t.Errorf("events read back (-want +got):\n%s", diff)
	}
}
