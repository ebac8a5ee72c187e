package claude

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/discover"
)

// fill sets every field of v (recursively) to a distinct non-zero value.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + itoa(*n))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint8, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).CanSet() {
				fill(v.Field(i), n)
			}
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := 0; i < 2; i++ {
			fill(s.Index(i), n)
		}
		v.Set(s)
	default:
		panic("fill: unhandled kind " + v.Kind().String())
	}
}

func TestAggCodecRoundTrip(t *testing.T) {
	var a aggregate
	n := 0
	fill(reflect.ValueOf(&a).Elem(), &n)
	for i := range a.Recent {
		a.Recent[i].Model = i // an index into ByModel
	}
	for i := range a.Slots {
		a.Slots[i].At = int64(1+10*i) * discover.SlotSeconds // slot starts, ascending
	}
	b, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got aggregate
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	// Passed through undecoded, the open groups survive another round trip.
	b2, _ := got.MarshalBinary()
	if string(b2) != string(b) {
		t.Error("re-encoding an undecoded entry changed it")
	}
	got = got.clone() // decodes the open groups, as appending does
	if diff := cmp.Diff(a, got, cmp.AllowUnexported(aggregate{})); diff != "" {
		t.Errorf("(-encoded +decoded):\n%s", diff)
	}
	for cut := 0; cut < len(b); cut++ {
		var x aggregate
		if x.UnmarshalBinary(b[:cut]) == nil {
			t.Fatalf("a truncated encoding (%d of %d bytes) decoded", cut, len(b))
		}
	}
}

// TestPlainLine: the fast path of title must agree with discover.OneLine.
func TestPlainLine(t *testing.T) {
	for _, s := range []string{"say hi", "two  spaces", " lead", "trail ", "tab\there", "new\nline", "café", "a\x1b[31mred",
		"x", "", "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012"} {
		if plainLine(s, titleMax) && discover.OneLine(s, titleMax) != s {
			t.Errorf("plainLine(%q) but OneLine gives %q", s, discover.OneLine(s, titleMax))
		}
	}
}
