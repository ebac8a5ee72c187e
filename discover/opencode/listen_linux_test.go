package opencode

import (
	"os"
	"path/filepath"
	"testing"
)

func TestListeners(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tcp")
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:9DE9 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 999 1 0000000000000000 100 0 0 10 0
   2: 0100007F:9DEA 0100007F:1234 01 00000000:00000000 00:00000000 00000000     0        0 4243 1 0000000000000000 100 0 0 10 0
   3: 0A00000F:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4244 1 0000000000000000 100 0 0 10 0
`
	if err := os.WriteFile(p, []byte(table), 0o600); err != nil {
		t.Fatal(err)
	}
	got := listeners(p, map[string]bool{"4242": true, "4243": true, "4244": true})
	if len(got) != 1 || got[0] != "127.0.0.1:40425" {
		t.Errorf("listeners = %v, want [127.0.0.1:40425] (loopback LISTEN rows of the process only)", got)
	}
}
