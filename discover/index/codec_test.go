package index

import (
	"testing"
	"time"
)

func TestEncDecRoundTrip(t *testing.T) {
	when := time.Date(2026, 3, 4, 5, 6, 7, 8, time.FixedZone("x", 3600))
	var e Enc
	e.Uint(300)
	e.Int(-5)
	e.Uint64(1 << 60)
	e.Byte(7)
	e.Str("héllo")
	e.Bytes([]byte{1, 2})
	e.Bool(true)
	if err := e.Time(when); err != nil {
		t.Fatal(err)
	}
	if err := e.Time(time.Time{}); err != nil {
		t.Fatal(err)
	}
	e.Str("shared")
	e.Uint(1)
	e.Byte(9)

	d := NewDec(e.Buf)
	if v := d.Uint(); v != 300 {
		t.Errorf("Uint %d", v)
	}
	if v := d.Int(); v != -5 {
		t.Errorf("Int %d", v)
	}
	if v := d.Uint64(); v != 1<<60 {
		t.Errorf("Uint64 %d", v)
	}
	if v := d.Byte(); v != 7 {
		t.Errorf("Byte %d", v)
	}
	if v := d.Str(); v != "héllo" {
		t.Errorf("Str %q", v)
	}
	if v := d.Bytes(); len(v) != 2 || v[0] != 1 || v[1] != 2 || cap(v) != 2 {
		t.Errorf("Bytes %v (cap %d)", v, cap(v))
	}
	if !d.Bool() {
		t.Error("Bool false")
	}
	if v := d.Time(); !v.Equal(when) || v.Format("-0700") != "+0100" {
		t.Errorf("Time %v", v)
	}
	if v := d.Time(); !v.IsZero() {
		t.Errorf("zero Time %v", v)
	}
	if v := d.Shared(); v != "shared" {
		t.Errorf("Shared %q", v)
	}
	if v := d.Count(); v != 1 || d.Bad() {
		t.Errorf("Count %d, bad %v", v, d.Bad())
	}
	d.Byte()
	if !d.Done() {
		t.Error("not Done after reading everything")
	}
}

func TestDecDamage(t *testing.T) {
	var e Enc
	e.Str("abcdef")
	d := NewDec(e.Buf[:4]) // length says 6, 3 bytes follow
	if s := d.Str(); s != "" || !d.Bad() || d.Done() {
		t.Fatalf("truncated Str %q, bad %v", s, d.Bad())
	}
	if v := d.Uint(); v != 0 || !d.Bad() {
		t.Fatalf("read after damage gave %d", v)
	}
	d = NewDec([]byte{5})
	if n := d.Count(); n != 0 || !d.Bad() {
		t.Fatalf("Count beyond the bytes left: %d, bad %v", n, d.Bad())
	}
}
