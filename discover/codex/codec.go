package codex

import (
	"encoding/binary"
	"errors"
	"time"
	"unique"
)

// The summary is the parse index payload of every rollout, and a big history has
// tens of thousands: decoded by gob (reflection, one allocation per value) the
// whole index stayed in memory for the entire listing. With these methods the
// index keeps the encoded bytes and decodes one summary when it is asked for (see
// index.Load). The format is a flat sequence of varints and length-prefixed
// strings; times are time.Time's binary form, which keeps the zone offset exactly
// as gob did. TestSummaryCodecRoundTrip fills every field, so a field added to
// summary but not here fails the tests.

const summaryCodecVersion = 1

var errSummaryCodec = errors.New("parse index entry: bad encoding")

// MarshalBinary encodes s for the parse index.
func (s *summary) MarshalBinary() ([]byte, error) {
	e := sumEnc{buf: make([]byte, 0, 128)}
	e.uint(summaryCodecVersion)
	h := s.Head
	var flags uint64
	for i, b := range []bool{h != nil, s.CtxTail, h != nil && h.Meta, s.Tail.TurnKnown, s.Tail.CtxFound, s.Tail.AtStart, s.Tail.Tokens != nil} {
		if b {
			flags |= 1 << i
		}
	}
	e.uint(flags)
	if h != nil {
		for _, v := range []string{h.ID, h.Cwd, h.Originator, h.Source, h.CLIVersion, h.Provider, h.HistoryMode, h.GitBranch, h.GitSHA, h.GitOrigin, h.Prompt} {
			e.str(v)
		}
		if err := e.time(h.Started); err != nil {
			return nil, err
		}
		if err := e.time(h.PromptTS); err != nil {
			return nil, err
		}
	}
	t := &s.Tail
	for _, v := range []time.Time{t.LastTS, t.TurnStarted, t.TurnEnded} {
		if err := e.time(v); err != nil {
			return nil, err
		}
	}
	e.int(int64(t.Turn))
	for _, v := range []string{t.Reason, t.Pending, t.ErrMsg, t.Cwd, t.Model, t.Approval, t.SettingsModel} {
		e.str(v)
	}
	if u := t.Tokens; u != nil {
		for _, n := range []int64{u.Input, u.Cached, u.CacheWrite, u.Output, u.Reasoning, u.Total} {
			e.int(n)
		}
	}
	return e.buf, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (s *summary) UnmarshalBinary(b []byte) error {
	d := sumDec{buf: b}
	if d.uint() != summaryCodecVersion {
		return errSummaryCodec
	}
	flags := d.uint()
	s.CtxTail = flags&(1<<1) != 0
	for i, p := range []*bool{&s.Tail.TurnKnown, &s.Tail.CtxFound, &s.Tail.AtStart} {
		*p = flags&(1<<(i+3)) != 0
	}
	if flags&1 != 0 {
		h := &headInfo{Meta: flags&(1<<2) != 0}
		h.ID = d.str()
		for _, p := range []*string{&h.Cwd, &h.Originator, &h.Source, &h.CLIVersion, &h.Provider, &h.HistoryMode, &h.GitBranch} {
			*p = d.shared()
		}
		h.GitSHA, h.GitOrigin, h.Prompt = d.str(), d.str(), d.str()
		h.Started, h.PromptTS = d.time(), d.time()
		s.Head = h
	}
	t := &s.Tail
	t.LastTS, t.TurnStarted, t.TurnEnded = d.time(), d.time(), d.time()
	t.Turn = turnState(d.int())
	t.Reason, t.Pending, t.ErrMsg = d.shared(), d.shared(), d.str()
	for _, p := range []*string{&t.Cwd, &t.Model, &t.Approval, &t.SettingsModel} {
		*p = d.shared()
	}
	if flags&(1<<6) != 0 {
		t.Tokens = &usage{Input: d.int(), Cached: d.int(), CacheWrite: d.int(), Output: d.int(), Reasoning: d.int(), Total: d.int()}
	}
	if d.err || len(d.buf) != 0 {
		return errSummaryCodec
	}
	return nil
}

type sumEnc struct{ buf []byte }

func (e *sumEnc) uint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *sumEnc) int(v int64)   { e.buf = binary.AppendVarint(e.buf, v) }
func (e *sumEnc) str(s string)  { e.uint(uint64(len(s))); e.buf = append(e.buf, s...) }

// time writes a length-prefixed time.Time binary form; the zero time is empty.
func (e *sumEnc) time(t time.Time) error {
	if t.IsZero() && t.Location() == time.UTC {
		e.uint(0)
		return nil
	}
	n := len(e.buf)
	e.buf = append(e.buf, 0) // the length fits in one byte: the form is ≤ 16 bytes
	var err error
	if e.buf, err = t.AppendBinary(e.buf); err != nil {
		return err
	}
	e.buf[n] = byte(len(e.buf) - n - 1)
	return nil
}

// sumDec reads; after the first error every read returns zero and err stays set.
type sumDec struct {
	buf []byte
	err bool
}

func (d *sumDec) fail() { d.err, d.buf = true, nil }

func (d *sumDec) uint() uint64 {
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *sumDec) int() int64 {
	v, n := binary.Varint(d.buf)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *sumDec) str() string {
	n := d.uint()
	if n > uint64(len(d.buf)) {
		d.fail()
		return ""
	}
	s := string(d.buf[:n])
	d.buf = d.buf[n:]
	return s
}

// shared is str for values that repeat across rollouts (directories, models,
// versions, modes), which a listing decodes all at once: the canonical copy
// (unique.Make), allocated only the first time.
func (d *sumDec) shared() string {
	n := d.uint()
	if n > uint64(len(d.buf)) {
		d.fail()
		return ""
	}
	b := d.buf[:n]
	d.buf = d.buf[n:]
	if n == 0 {
		return ""
	}
	return unique.Make(string(b)).Value()
}

func (d *sumDec) time() time.Time {
	n := d.uint()
	if n == 0 || n > uint64(len(d.buf)) {
		if n != 0 {
			d.fail()
		}
		return time.Time{}
	}
	var t time.Time
	if err := t.UnmarshalBinary(d.buf[:n]); err != nil {
		d.fail()
		return time.Time{}
	}
	d.buf = d.buf[n:]
	return t
}
