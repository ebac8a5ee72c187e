// Package metrics turns what one agentctl command saw — a fan-out's sessions and
// adapter timings, the locks and fuses files, the events journal — into the
// Prometheus families of product.md §8. It is its own package so that the
// exposition library stays out of every other command, and so the families can be
// tested from plain inputs, without a CLI, a home or a clock.
package metrics

import (
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/agentctl/agentctl/discover"
	"github.com/agentctl/agentctl/meta"
)

// DurationBuckets are the session-duration histogram's upper bounds in seconds
// (product.md §8): a minute, five, ten, half an hour, an hour, two.
var DurationBuckets = []float64{60, 300, 600, 1800, 3600, 7200}

// Statuses are the session statuses every adapter gets a series for, so a
// status that has no session reads 0 instead of vanishing from a dashboard.
var Statuses = []string{discover.StatusRunning, discover.StatusIdle, discover.StatusWaiting,
	discover.StatusStopped, discover.StatusFailed, discover.StatusUnknown}

// TokenClasses are the class label values of agentctl_session_tokens_total.
var TokenClasses = []string{"input", "output", "cache_read", "cache_write"}

// LockTypes are the type label values of agentctl_locks.
var LockTypes = []string{"auto", "manual"}

// Launch outcomes, the outcome label of agentctl_launches_total.
const (
	OutcomeCompleted = "completed" // exit code 0
	OutcomeFailed    = "failed"    // session.failed: a startup failure, a non-zero exit, a classified error
	OutcomeStopped   = "stopped"   // ended by `agentctl stop`
	OutcomeUnknown   = "unknown"   // ended, exit not observed (finalised lazily after the supervisor died)
)

// Outcomes are the outcome label values every adapter gets a series for.
var Outcomes = []string{OutcomeCompleted, OutcomeFailed, OutcomeStopped, OutcomeUnknown}

// Sessions is a fan-out's sessions; discover.Listing is one.
type Sessions interface {
	Len() int
	At(i int) *discover.Session
}

// Input is everything one exposition reports. The caller does the I/O; the
// families are a pure function of it.
type Input struct {
	// SessionAdapters are the adapter label values that get zero-filled session
	// series (the adapters asked, pi-rust included when pi was).
	SessionAdapters []string
	// Sessions are the sessions in the window, as `list -a --since` keeps them.
	Sessions Sessions
	// Adapters are the adapters the fan-out ran; Up and Elapsed are its answers.
	Adapters []string
	Up       map[string]bool
	Elapsed  map[string]time.Duration
	// Locks counts live locks by type ("auto", "manual").
	Locks map[string]int
	Fuses int
	// Journal reads the events journal, oldest first (meta.Store.ReadEvents).
	// Nil means no journal.
	Journal func(fn func(ev meta.Event, raw []byte) bool) error
}

// Registry builds a registry of its own (never the process-wide default, which
// would add Go runtime families nobody asked a CLI for) holding the §8 families.
func Registry(in Input) (*prometheus.Registry, error) {
	reg := prometheus.NewPedanticRegistry()

	sessions := gaugeVec("agentctl_sessions",
		"Sessions by adapter and status, as discovered now (alive ones, plus ended ones in the window).",
		"adapter", "status")
	tokens := counterVec("agentctl_session_tokens_total",
		"Tokens used by the sessions in the window, by adapter and token class.",
		"adapter", "class")
	cost := counterVec("agentctl_session_cost_usd_total",
		"Cost in US dollars of the sessions in the window (agent-reported, else estimated), by adapter.",
		"adapter")
	for _, a := range in.SessionAdapters {
		for _, st := range Statuses {
			sessions.WithLabelValues(a, st)
		}
		for _, c := range TokenClasses {
			tokens.WithLabelValues(a, c)
		}
		cost.WithLabelValues(a)
	}
	if in.Sessions != nil {
		for i := 0; i < in.Sessions.Len(); i++ {
			s := in.Sessions.At(i)
			sessions.WithLabelValues(s.Adapter, s.Status).Inc()
			// Own: a fork's copied turns count once, in the session they came from.
			t, usd := s.Own()
			if s.Tokens != nil {
				tokens.WithLabelValues(s.Adapter, "input").Add(float64(t.Input))
				tokens.WithLabelValues(s.Adapter, "output").Add(float64(t.Output))
				tokens.WithLabelValues(s.Adapter, "cache_read").Add(float64(t.CacheRead))
				tokens.WithLabelValues(s.Adapter, "cache_write").Add(float64(t.CacheWrite))
			}
			if s.CostUSD != nil && usd > 0 {
				cost.WithLabelValues(s.Adapter).Add(usd)
			}
		}
	}

	lockGauge := gaugeVec("agentctl_locks",
		"Live directory locks by type.",
		"type")
	for _, t := range LockTypes {
		lockGauge.WithLabelValues(t)
	}
	for t, n := range in.Locks {
		lockGauge.WithLabelValues(t).Set(float64(n))
	}
	fuses := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "agentctl_fuses",
		Help: "Armed directory fuses.",
	})
	fuses.Set(float64(in.Fuses))

	up := gaugeVec("agentctl_adapter_up",
		"1 if the adapter answered this discovery without error within its timeout, else 0.",
		"adapter")
	took := gaugeVec("agentctl_adapter_discovery_seconds",
		"How long the adapter's discovery took (its timeout when it did not answer).",
		"adapter")
	for _, a := range in.Adapters {
		v := 0.0
		if in.Up[a] {
			v = 1
		}
		up.WithLabelValues(a).Set(v)
		took.WithLabelValues(a).Set(in.Elapsed[a].Seconds())
	}

	launches := counterVec("agentctl_launches_total",
		"Launches that ended, by adapter and outcome, from the events journal (it resets when the journal's oldest generation is rotated away).",
		"adapter", "outcome")
	duration := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "agentctl_session_duration_seconds",
		Help:    "Run time of launched sessions that ended, from launch to end, from the events journal.",
		Buckets: DurationBuckets,
	})
	for _, a := range in.SessionAdapters {
		for _, o := range Outcomes {
			launches.WithLabelValues(a, o)
		}
	}
	if in.Journal != nil {
		ends, err := Ends(in.Journal)
		if err != nil {
			return nil, err
		}
		for _, e := range ends {
			launches.WithLabelValues(e.Adapter, e.Outcome).Inc()
			if e.Duration >= 0 {
				duration.Observe(e.Duration.Seconds())
			}
		}
	}

	for _, c := range []prometheus.Collector{sessions, tokens, cost, lockGauge, fuses, up, took, launches, duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

func gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// Write prints the registry's families in the text exposition format.
func Write(w io.Writer, g prometheus.Gatherer) error {
	mfs, err := g.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

// WriteTextfile replaces path with the exposition for node_exporter's textfile
// collector: written to a temp file in the same directory and renamed, so the
// collector never reads half a file (it only reads *.prom names, and the temp
// file's name does not end in .prom).
func WriteTextfile(path string, g prometheus.Gatherer) error {
	return prometheus.WriteToTextfile(path, g)
}
