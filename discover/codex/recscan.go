package codex

import (
	"encoding/json"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentctl/agentctl/internal/strictjson"
)

// A cold listing without a state DB decodes the head of every rollout
// (session_meta and the lines up to the first prompt) into a record; with
// encoding/json that is a fifth of its time (it validates the line, then walks
// it again through reflection). scanRecord does both in one pass over the
// bytes, for the lines it can answer exactly: those where decode(line) would
// succeed and fill the record the same way. It reports false for any other
// line (invalid JSON, a value of an unexpected type or null, a key that only
// differs in case or is escaped, a repeated key, a field it does not model, a
// line without a payload object…), and the caller decodes that line with
// decode, so results never depend on which path ran. The JSON walker is
// strictjson.Scanner, which Pi's entry scanner uses too.

// foldsOnto reports whether key may name one of names under encoding/json's
// case-insensitive matching. A non-ASCII byte counts as a possible match
// (encoding/json folds Unicode too: the Kelvin sign is a 'k').
func foldsOnto(key []byte, names []string) bool {
	for _, f := range names {
		if len(key) == len(f) && strictjson.EqualFoldASCII(key, f) {
			return true
		}
	}
	for _, c := range key {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

// jsonNames lists the JSON names of t's fields (what encoding/json may match
// a key onto).
func jsonNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

var (
	recordNames  = jsonNames(reflect.TypeOf(record{}))
	payloadNames = jsonNames(reflect.TypeOf(payload{}))
	itemNames    = jsonNames(reflect.TypeOf(item{}))
	partNames    = jsonNames(reflect.TypeOf(part{}))
	gitNames     = jsonNames(reflect.TypeOf(payload{}.Git).Elem())

	threadSettingsNames = jsonNames(reflect.TypeOf(payload{}.ThreadSettings).Elem())
)

// recScan is one scanRecord run.
type recScan struct {
	s      strictjson.Scanner
	maxStr int // give up on a string value longer than this (raw bytes); 0: any
}

// blanked reports whether shrinkJSON (maxStr) turns key into "", which no
// field matches: its value is skipped.
func (r *recScan) blanked(key []byte) bool {
	return r.maxStr > 0 && len(key) > r.maxStr
}

// str decodes the string at v0 into dst and returns its end; -1 for anything
// that is not a string (null included: it is left to encoding/json).
func (r *recScan) str(v0 int, dst *string) int {
	if v0 >= len(r.s.B) || r.s.B[v0] != '"' {
		return -1
	}
	v1, special := r.s.Str(v0)
	if v1 < 0 || (r.maxStr > 0 && v1-v0-2 > r.maxStr) {
		return -1
	}
	raw := r.s.B[v0+1 : v1-1]
	if special {
		*dst = unquote(raw)
		return v1
	}
	*dst = string(raw)
	return v1
}

// unquote is encoding/json's unquoting of a string's contents the scanner
// validated (only the standard escapes, no control character): escapes
// decoded, a lone or broken surrogate and invalid UTF-8 replaced by U+FFFD.
func unquote(s []byte) string {
	b := make([]byte, 0, len(s)+utf8.UTFMax)
	for r := 0; r < len(s); {
		switch c := s[r]; {
		case c == '\\':
			r++
			switch s[r] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := getu4(s[r+1:])
				r += 5
				if utf16.IsSurrogate(rr) {
					if r+1 < len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, getu4(s[r+2:])); dec != unicode.ReplacementChar {
							r += 6
							b = utf8.AppendRune(b, dec)
							continue
						}
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // '"', '\\', '/'
				b = append(b, s[r])
			}
			r++
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			b = utf8.AppendRune(b, rr)
		}
	}
	return string(b)
}

// getu4 decodes the four hex digits at the start of s (the scanner checked
// them).
func getu4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// raw copies the value at v0 (not null) into dst as json.RawMessage does.
func (r *recScan) raw(v0 int, dst *json.RawMessage) int {
	if r.s.Lit(v0, "null") > 0 {
		return -1
	}
	if v0 < len(r.s.B) && r.s.B[v0] == '"' {
		var tmp string
		v1 := r.str(v0, &tmp) // the same length limit as any string
		if v1 < 0 {
			return -1
		}
		*dst = append(json.RawMessage(nil), r.s.B[v0:v1]...)
		return v1
	}
	v1 := r.s.Value(v0, 2)
	if v1 < 0 {
		return -1
	}
	if r.maxStr > 0 {
		return -1 // strings inside would need the length check
	}
	*dst = append(json.RawMessage(nil), r.s.B[v0:v1]...)
	return v1
}

// members walks the object at v0: a key spelled exactly as one of names is
// handed to want (once; a repeat gives up), any other key that encoding/json
// may match onto a field of the struct (names) gives up, the rest are skipped.
func (r *recScan) members(v0, depth int, names []string, seen []bool, want func(k, v0 int) int) int {
	return r.fields(v0, depth, names, names, seen, want)
}

// fields is members for a struct of which only the fields named known are
// decoded here: a key spelled as one of them is handed to want (k indexes
// known), any other that encoding/json may match onto one of the struct's
// fields (all) gives up, the rest are skipped.
func (r *recScan) fields(v0, depth int, known, all []string, seen []bool, want func(k, v0 int) int) int {
	return r.s.Object(v0, depth, func(key []byte, plain bool, x0 int) int {
		if r.blanked(key) {
			return r.s.Value(x0, depth+1)
		}
		if !plain {
			return -1
		}
		for k, n := range known {
			if string(key) == n {
				if seen[k] {
					return -1
				}
				seen[k] = true
				return want(k, x0)
			}
		}
		if foldsOnto(key, all) {
			return -1
		}
		return r.s.Value(x0, depth+1)
	})
}

// parts decodes a content array of {type, text} objects.
func (r *recScan) parts(v0, depth int, dst *[]part) int {
	ps := []part{}
	end := r.s.Array(v0, depth, func(e0 int) int {
		var p part
		var seen [2]bool
		e1 := r.members(e0, depth+1, partNames, seen[:], func(k, x0 int) int {
			if k == 0 {
				return r.str(x0, &p.Type)
			}
			return r.str(x0, &p.Text)
		})
		ps = append(ps, p)
		return e1
	})
	*dst = ps
	return end
}

// The fields scanRecord decodes, by JSON name; any other field of payload or
// item gives up.
var (
	scanPayloadFields = []string{"type", "id", "timestamp", "cwd", "originator", "cli_version", "model_provider", "history_mode",
		"turn_id", "model", "approval_policy", "reason", "message", "role", "name", "arguments", "input", "call_id", "status",
		"source", "git", "content", "item", "thread_settings"}
	scanItemFields = []string{"type", "id", "text", "status", "aggregated_output", "output", "server", "tool", "content", "command", "changes"}
)

// scanRecord fills rec from line as decode(line) would, for a zero rec, and
// reports whether it could (false: rec is unspecified, call decode). With
// maxStr > 0 it answers as decode(shrinkJSON(line, maxStr)) instead: it
// gives up on any string it keeps that is longer (shrinkJSON would blank it),
// and the strings it skips do not matter.
func scanRecord(line []byte, rec *record, maxStr int) bool {
	r := &recScan{s: strictjson.Scanner{B: line, Loose: maxStr}, maxStr: maxStr}
	var seen [3]bool
	havePayload := false
	end := r.members(r.s.WS(0), 0, recordNames, seen[:], func(k, v0 int) int {
		switch k {
		case 0:
			return r.str(v0, &rec.Timestamp)
		case 1:
			return r.str(v0, &rec.Type)
		}
		if r.s.Lit(v0, "null") > 0 {
			return -1
		}
		havePayload = true
		rec.Payload = &payload{}
		return r.payload(v0, rec.Payload)
	})
	return end >= 0 && havePayload && r.s.WS(end) == len(line)
}

func (r *recScan) payload(v0 int, p *payload) int {
	strs := [...]*string{&p.Type, &p.ID, &p.Timestamp, &p.Cwd, &p.Originator, &p.CLIVersion, &p.ModelProvider, &p.HistoryMode,
		&p.TurnID, &p.Model, &p.ApprovalPolicy, &p.Reason, &p.Message, &p.Role, &p.Name, &p.Arguments, &p.Input, &p.CallID, &p.Status}
	var seen [len(strs) + 5]bool
	known := scanPayloadFields
	return r.fields(v0, 1, known, payloadNames, seen[:], func(k, x0 int) int {
		switch {
		case k < len(strs):
			return r.str(x0, strs[k])
		case known[k] == "source":
			return r.raw(x0, &p.Source)
		case known[k] == "git":
			if r.s.Lit(x0, "null") > 0 {
				return -1
			}
			g := &struct {
				CommitHash    string `json:"commit_hash"`
				Branch        string `json:"branch"`
				RepositoryURL string `json:"repository_url"`
			}{}
			p.Git = g
			var gs [3]bool
			return r.members(x0, 2, gitNames, gs[:], func(k, y0 int) int {
				return r.str(y0, [...]*string{&g.CommitHash, &g.Branch, &g.RepositoryURL}[k])
			})
		case known[k] == "content":
			return r.parts(x0, 2, &p.Content)
		case known[k] == "thread_settings":
			if r.s.Lit(x0, "null") > 0 {
				return -1
			}
			ts := &struct {
				Model string `json:"model"`
				Cwd   string `json:"cwd"`
			}{}
			p.ThreadSettings = ts
			var ss [2]bool
			return r.members(x0, 2, threadSettingsNames, ss[:], func(k, y0 int) int {
				return r.str(y0, [...]*string{&ts.Model, &ts.Cwd}[k])
			})
		}
		if r.s.Lit(x0, "null") > 0 {
			return -1
		}
		p.Item = &item{}
		return r.item(x0, p.Item)
	})
}

func (r *recScan) item(v0 int, it *item) int {
	strs := [...]*string{&it.Type, &it.ID, &it.Text, &it.Status, &it.AggregatedOutput, &it.Output, &it.Server, &it.Tool}
	var seen [len(strs) + 3]bool
	known := scanItemFields
	return r.fields(v0, 2, known, itemNames, seen[:], func(k, x0 int) int {
		switch {
		case k < len(strs):
			return r.str(x0, strs[k])
		case known[k] == "content":
			return r.parts(x0, 3, &it.Content)
		case known[k] == "command":
			return r.raw(x0, &it.Command)
		}
		return r.raw(x0, &it.Changes)
	})
}

// decodeFast is decode, through scanRecord where it answers (the same record).
func decodeFast(line []byte) (record, error) {
	var r record
	if scanRecord(line, &r, 0) {
		return r, nil
	}
	return decode(line)
}
