package main

import (
	"runtime/debug"
	"testing"
)

// TestStampOf pins what `version` prints for each way agentctl is built.
func TestStampOf(t *testing.T) {
	vcs := func(rev, tm, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: tm}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "475f718abcdef0123456789abcdef0123456789a"
	for _, tc := range []struct {
		name, ld string
		bi       *debug.BuildInfo
		want     string
	}{
		{"no build info", "dev", nil, "dev"},
		{"go test", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{"go build in a checkout", "dev", &debug.BuildInfo{
			Main:     debug.Module{Version: "v0.0.0-20261202015500-475f718abcde+dirty"},
			Settings: vcs(rev, "2026-12-02T01:55:00Z", "true")}, "dev (rev 475f718, 2026-12-02, modified)"},
		{"go build of a tagged clean checkout", "dev", &debug.BuildInfo{
			Main:     debug.Module{Version: "v1.2.3"},
			Settings: vcs(rev, "2026-12-02T01:55:00Z", "false")}, "v1.2.3 (rev 475f718, 2026-12-02)"},
		{"go install module@version", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"release with -ldflags", "1.4.0", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"},
			Settings: vcs(rev, "2026-12-02T01:55:00Z", "false")}, "1.4.0 (rev 475f718, 2026-12-02)"},
	} {
		if got := stampOf(tc.ld, tc.bi).String(); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
