package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/discover"
)

// statusLeavesOut are the Session fields `status` does not print, on purpose:
// their facts show elsewhere in its lines, or only in --json.
var statusLeavesOut = map[string]string{
	"Host": "set only where JSON from other hosts is merged; a remote status prints that host's own lines",
}

// TestStatusShowsEveryField: `status` of a session with every field set prints
// every string field's value (statusFields), so a field added to Session is
// either shown or listed in statusLeavesOut.
func TestStatusShowsEveryField(t *testing.T) {
	var s discover.Session
	fillAll(t, reflect.ValueOf(&s).Elem(), "Session")
	var b bytes.Buffer
	writeStatus(&b, &s, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	out := b.String()
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Type.Kind() != reflect.String || statusLeavesOut[f.Name] != "" {
			continue
		}
		if val := v.Field(i).String(); !strings.Contains(out, val) {
			t.Errorf("status does not print Session.%s (%q):\n%s", f.Name, val, out)
		}
	}
	for k, val := range s.Meta {
		if !strings.Contains(out, "meta."+k+":") || !strings.Contains(out, val) {
			t.Errorf("status does not print meta %q:\n%s", k, out)
		}
	}
}
