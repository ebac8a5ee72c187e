package metrics

import (
	"bytes"
	"fmt"
	"io"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Exposition is one host's answer to `agentctl metrics`, for `metrics --host`.
type Exposition struct {
	Host string
	Text []byte // the text exposition format
}

// Families are merged metric families, ready to print.
type Families []*dto.MetricFamily

// Merge merges the hosts' expositions: every sample gets a host label (first,
// so the series of two hosts never collide), each family keeps one HELP and
// TYPE (the first host's), and the families come sorted by name. A host whose
// exposition does not parse keeps the families read before the error, and
// gets a warning naming it: one broken host must not hide the others.
func Merge(in []Exposition) (fams Families, warnings []string) {
	byName := map[string]*dto.MetricFamily{}
	for _, h := range in {
		dec := expfmt.NewDecoder(bytes.NewReader(h.Text), expfmt.NewFormat(expfmt.TypeTextPlain))
		for {
			var mf dto.MetricFamily
			if err := dec.Decode(&mf); err == io.EOF {
				break
			} else if err != nil {
				warnings = append(warnings, fmt.Sprintf("%s: unreadable metrics: %v", h.Host, err))
				break
			}
			for _, m := range mf.Metric {
				m.Label = append([]*dto.LabelPair{{Name: strPtr("host"), Value: strPtr(h.Host)}}, m.Label...)
			}
			if have, ok := byName[mf.GetName()]; ok {
				have.Metric = append(have.Metric, mf.Metric...)
			} else {
				byName[mf.GetName()] = &mf
			}
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fams = append(fams, byName[n])
	}
	return fams, warnings
}

// Write prints the families in the text exposition format.
func (fams Families) Write(w io.Writer) error {
	for _, mf := range fams {
		if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
			return err
		}
	}
	return nil
}

func strPtr(s string) *string { return &s }
