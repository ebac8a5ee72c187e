package main

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/discover"
)

// appendSessionJSON appends s as encoding/json (elemEncoder) would print it: an
// element of an indented array (encoding/json with SetIndent("  ", "  ") and
// SetEscapeHTML(false)), without the leading "  " and the trailing newline.
// Listings print tens of thousands of sessions, and encoding them by reflection
// was most of `list --json`'s CPU and garbage. ok is false when a value needs
// encoding/json's own handling (an error such as a NaN cost or a year beyond
// 9999): the caller then encodes that session the generic way, so the output —
// and every error — stays exactly encoding/json's. TestSessionJSONMatchesStdlib
// compares the two on every field.
func appendSessionJSON(b []byte, s *discover.Session) (_ []byte, ok bool) {
	const ind = "\n    " // one field of an array element
	b = append(b, '{')
	first := true
	key := func(k string) {
		if first {
			first = false
		} else {
			b = append(b, ',')
		}
		b = append(b, ind...)
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, `": `...)
	}
	str := func(k, v string) {
		if v != "" {
			key(k)
			b = appendJSONString(b, v)
		}
	}
	tm := func(k string, t *time.Time) bool {
		if t == nil {
			return true
		}
		key(k)
		b, ok = appendJSONTime(b, *t)
		return ok
	}
	key("id")
	b = appendJSONString(b, s.ID)
	key("adapter")
	b = appendJSONString(b, s.Adapter)
	key("status")
	b = appendJSONString(b, s.Status)
	key("evidence")
	b = appendJSONString(b, s.Evidence)
	str("evidence_detail", s.EvidenceDetail)
	str("blocked_reason", s.BlockedReason)
	if s.Inferred {
		key("inferred")
		b = append(b, "true"...)
	}
	if s.PID != 0 {
		key("pid")
		b = strconv.AppendInt(b, int64(s.PID), 10)
	}
	str("cwd", s.Cwd)
	str("last_cwd", s.LastCwd)
	str("model", s.Model)
	if len(s.Models) > 0 {
		key("models")
		b = append(b, '[')
		for i, m := range s.Models {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, "\n      "...)
			b = appendJSONString(b, m)
		}
		b = append(b, "\n    ]"...)
	}
	str("title", s.Title)
	str("prompt", s.Prompt)
	if !tm("started_at", s.StartedAt) || !tm("last_activity", s.LastActivity) || !tm("ended_at", s.EndedAt) {
		return b, false
	}
	if s.ExitCode != nil {
		key("exit_code")
		b = strconv.AppendInt(b, int64(*s.ExitCode), 10)
	}
	str("exit_reason", s.ExitReason)
	if s.Budget != nil {
		// Only launched sessions with a budget: rare, so the generic way.
		key("budget")
		sub, err := json.MarshalIndent(s.Budget, "    ", "  ")
		if err != nil {
			return b, false
		}
		b = append(b, sub...)
	}
	if t := s.Tokens; t != nil {
		key("tokens")
		b = append(b, "{\n      \"input\": "...)
		b = strconv.AppendInt(b, t.Input, 10)
		b = append(b, ",\n      \"output\": "...)
		b = strconv.AppendInt(b, t.Output, 10)
		b = append(b, ",\n      \"cache_read\": "...)
		b = strconv.AppendInt(b, t.CacheRead, 10)
		b = append(b, ",\n      \"cache_write\": "...)
		b = strconv.AppendInt(b, t.CacheWrite, 10)
		b = append(b, "\n    }"...)
	}
	if s.CostUSD != nil {
		key("cost_usd")
		if b, ok = appendJSONFloat(b, *s.CostUSD); !ok {
			return b, false
		}
	}
	str("cost_source", s.CostSource)
	str("git_branch", s.GitBranch)
	str("agent_version", s.AgentVersion)
	str("entrypoint", s.Entrypoint)
	str("permission_mode", s.PermissionMode)
	str("group", s.Group)
	str("spec", s.Spec)
	if len(s.Meta) > 0 {
		key("meta")
		keys := make([]string, 0, len(s.Meta))
		for k := range s.Meta {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, strings.Compare)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, "\n      "...)
			b = appendJSONString(b, k)
			b = append(b, ": "...)
			b = appendJSONString(b, s.Meta[k])
		}
		b = append(b, "\n    }"...)
	}
	str("launch_id", s.LaunchID)
	str("log", s.Log)
	str("host", s.Host)
	str("path", s.Path)
	str("kind", s.Kind)
	str("job_id", s.JobID)
	if len(s.Extra) > 0 {
		key("extra")
		if b, ok = appendExtraJSON(b, s.Extra); !ok {
			return b, false
		}
	}
	b = append(b, "\n  }"...)
	return b, true
}

// appendExtraJSON appends the extra map at field depth. Strings, booleans and
// numbers are written directly; any other value (nested maps, slices, nil) is
// encoded by encoding/json at its indentation.
func appendExtraJSON(b []byte, m map[string]any) (_ []byte, ok bool) {
	var arr [16]string
	keys := arr[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, strings.Compare)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n      "...)
		b = appendJSONString(b, k)
		b = append(b, ": "...)
		switch v := m[k].(type) {
		case string:
			b = appendJSONString(b, v)
		case bool:
			b = strconv.AppendBool(b, v)
		case int:
			b = strconv.AppendInt(b, int64(v), 10)
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case float64:
			if b, ok = appendJSONFloat(b, v); !ok {
				return b, false
			}
		default:
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("      ", "  ")
			if enc.Encode(v) != nil {
				return b, false
			}
			b = append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	b = append(b, "\n    }"...)
	return b, true
}

// appendJSONTime is time.Time.MarshalJSON without its allocation; ok is false
// where MarshalJSON fails.
func appendJSONTime(b []byte, t time.Time) (_ []byte, ok bool) {
	b = append(b, '"')
	n0 := len(b)
	b = t.AppendFormat(b, time.RFC3339Nano)
	// MarshalJSON's checks (time.appendStrictRFC3339).
	num2 := func(b []byte) byte { return 10*(b[0]-'0') + (b[1] - '0') }
	switch {
	case len(b) < n0+5 || b[n0+4] != '-': // year must be exactly 4 digits wide
		return b, false
	case b[len(b)-1] != 'Z':
		c := b[len(b)-len("Z07:00")]
		if ('0' <= c && c <= '9') || num2(b[len(b)-len("07:00"):]) >= 24 {
			return b, false
		}
	}
	return append(b, '"'), true
}

// appendJSONFloat is encoding/json's float64 encoding; ok is false for NaN and
// infinities, which it refuses.
func appendJSONFloat(b []byte, f float64) (_ []byte, ok bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// appendJSONString is encoding/json's string encoding with HTML escaping off:
// quotes, backslashes and control characters escaped, invalid UTF-8 replaced by
// U+FFFD, U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
