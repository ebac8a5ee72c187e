package discover

import (
	"math"
	"math/rand"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// referenceSort is the plain definition SortSessions must match exactly.
func referenceSort(ss []Session) {
	sort.SliceStable(ss, func(i, j int) bool {
		ai, aj := Alive(ss[i].Status), Alive(ss[j].Status)
		if ai != aj {
			return ai
		}
		ti, tj := ss[i].LastSeen(), ss[j].LastSeen()
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return ss[i].ID < ss[j].ID
	})
}

func randomSessions(r *rand.Rand, n int) []Session {
	statuses := []string{StatusRunning, StatusIdle, StatusStopped, StatusFailed, StatusUnknown, StatusWaiting}
	base := time.Unix(1795211000, 0)
	ss := make([]Session, n)
	for i := range ss {
		s := Session{ID: strconv.Itoa(r.Intn(n / 2)), Adapter: strconv.Itoa(i), Status: statuses[r.Intn(len(statuses))]}
		switch r.Intn(4) {
		case 0: // no times at all
		case 1:
			t := base.Add(time.Duration(r.Intn(20)) * time.Millisecond)
			s.StartedAt = &t
		default:
			t := base.Add(time.Duration(r.Intn(20))*time.Second + time.Duration(r.Intn(3)))
			if r.Intn(2) == 0 {
				t = t.In(time.FixedZone("x", 3600)) // same instant, other zone
			}
			s.LastActivity = &t
		}
		ss[i] = s
	}
	return ss
}

func TestSortSessionsMatchesStableSort(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, n := range []int{0, 1, 2, 3, 10, 100, 1000} {
		for round := 0; round < 20; round++ {
			got := randomSessions(r, n+2)
			want := append([]Session(nil), got...)
			SortSessions(got)
			referenceSort(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("n=%d: SortSessions differs from the stable sort (-want +got):\n%s", n, diff)
			}
		}
	}
}

func BenchmarkSortSessions10k(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	src := randomSessions(r, 10000)
	ss := make([]Session, len(src))
	b.ReportAllocs()
	for b.Loop() {
		copy(ss, src)
		SortSessions(ss)
	}
}

func TestTokensAddSaturates(t *testing.T) {
	var tk Tokens
	tk.Add(Tokens{Input: math.MaxInt64 - 1, Output: math.MinInt64 + 1, CacheRead: 5})
	tk.Add(Tokens{Input: 10, Output: -10, CacheRead: -7})
	if tk.Input != math.MaxInt64 || tk.Output != math.MinInt64 || tk.CacheRead != -2 {
		t.Fatalf("%+v", tk)
	}
}
