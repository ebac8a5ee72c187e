package discover

import (
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/jsonl"
)

// Tail's growing windows hold exactly the lines jsonl.Tail reads for each size.
func TestTailMatchesTailLines(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	dir := t.TempDir()
	for round := 0; round < 100; round++ {
		var b strings.Builder
		for i, n := 0, r.Intn(40); i < n; i++ {
			switch r.Intn(6) {
			case 0:
				b.WriteString("\n") // empty line
			case 1:
				b.WriteString(strings.Repeat("x", r.Intn(3000)) + "\r\n")
			case 2:
				b.WriteString(`{"a":` + strings.Repeat("7", r.Intn(20000)) + "}\n")
			default:
				b.WriteString(strings.Repeat("y", r.Intn(200)) + "\n")
			}
		}
		if r.Intn(2) == 0 {
			b.WriteString("partial last line")
		}
		p := filepath.Join(dir, "f.jsonl")
		if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		open := OpenTail
		if round%2 == 1 {
			open = OpenTailMapped
		}
		tail, err := open(p)
		if err != nil {
			t.Fatal(err)
		}
		if round%2 == 1 && b.Len() > 0 && !tail.Mapped() && runtime.GOOS != "windows" {
			t.Fatal("not mapped")
		}
		window := int64(1 + r.Intn(500))
		for step := 0; step < 30; step++ {
			gotL, gotO, gotStart, err := tail.Window(window)
			if err != nil {
				t.Fatal(err)
			}
			wantL, wantO, wantStart, _ := jsonl.Tail(p, window)
			if !reflect.DeepEqual(wantL, gotL) || !reflect.DeepEqual(wantO, gotO) || wantStart != gotStart {
				t.Fatalf("round %d window %d: lines (-jsonl.Tail +Tail):\n%s\noffsets %v vs %v, atStart %v vs %v", round, window, cmp.Diff(wantL, gotL), wantO, gotO, wantStart, gotStart)
			}
			if gotStart {
				break
			}
			window = window*2 + int64(r.Intn(3))
		}
		tail.Close()
	}
}
