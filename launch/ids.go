package launch

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
)

// NewLaunchID returns a launch id: "l-" + 12 hex characters.
func NewLaunchID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "l-" + hex.EncodeToString(b[:])
}

// NewUUID4 returns a random lowercase UUID version 4 (crypto/rand).
func NewUUID4() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func sortStrings(s []string) { sort.Strings(s) }
