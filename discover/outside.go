package discover

import "time"

// Left is what a listing's filter leaves out by its window alone: sessions
// the same filter would keep with -a and no --since.
type Left struct {
	Ended  int       // ended inside the window (shown with -a)
	Older  int       // ended before the window
	Newest time.Time // the last activity of the newest older one
}

// Outside counts the sessions of ls that f leaves out by its window alone
// (Left). Call it before Filter; like Filter it decides a packed session from
// its sort key when f filters by time only.
func (ls *Listing) Outside(f Filter) Left {
	wide := f
	wide.All, wide.Since = true, 0
	var l Left
	count := func(alive, unknown bool, t time.Time) {
		if f.keepAt(alive, unknown, t) {
			return
		}
		if f.Since <= 0 || t.IsZero() || f.Now.Sub(t) <= f.Since {
			l.Ended++
			return
		}
		l.Older++
		if t.After(l.Newest) {
			l.Newest = t
		}
	}
	for _, r := range ls.order {
		c := &ls.chunks[r.c]
		if _, edited := c.edited[r.i]; c.p != nil && !edited && f.byTime() {
			k := c.p.keys[r.i]
			count(k.alive, k.unknown, time.Unix(k.sec, int64(k.nsec)))
			continue
		}
		s := ls.view(r)
		if wide.keep(s) {
			count(Alive(s.Status), s.Status == StatusUnknown, s.LastSeen())
		}
	}
	return l
}
