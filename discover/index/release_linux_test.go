package index

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// mappingRSS returns the resident kilobytes of the mapping that starts at b,
// from /proc/self/smaps.
func mappingRSS(t *testing.T, b []byte) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "-") && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			in = strings.HasPrefix(line, start)
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			kb, err := strconv.Atoi(strings.Fields(line)[1])
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatalf("no mapping at %s in /proc/self/smaps", start)
	return 0
}

// Save is where a listing is done with its index: the mapped file's pages
// leave the process's resident memory, and a Get after it still reads every
// entry (the pages come back from the page cache).
func TestSaveReleasesMappedPages(t *testing.T) {
	dir := t.TempDir()
	writeBin(t, dir, 40000, strings.Repeat("y", 100)) // about 6 MB
	ix := Load[*binPayload](dir, "m", 1)
	if !ix.mapped() {
		t.Skip("index file not mapped")
	}
	get := func() {
		t.Helper()
		for i := range 40000 {
			e, ok := ix.Get(fmt.Sprintf("/p/%05d", i))
			if !ok || e.Payload.Lines != i || e.Payload.Name != strings.Repeat("y", 100)+fmt.Sprint(i) {
				t.Fatalf("entry %d: %+v, %v", i, e.Payload, ok)
			}
		}
	}
	get()
	before := mappingRSS(t, ix.mapping)
	if err := ix.Save(); err != nil {
		t.Fatal(err)
	}
	after := mappingRSS(t, ix.mapping)
	t.Logf("mapping of %d KB: %d KB resident after reading every entry, %d KB after Save", len(ix.mapping)>>10, before, after)
	if before < len(ix.mapping)>>11 || after > before/4 {
		t.Errorf("resident before Save %d KB, after %d KB: want most of the %d KB mapping, then little of it", before, after, len(ix.mapping)>>10)
	}
	get()
}
