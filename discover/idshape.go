package discover

// Id shapes shared by the adapters' MayHold and file-name scans. A lookup asks
// them of every file name of a big history, so they read a table, not a loop
// over runes.

// hexClass sorts the bytes of hexadecimal digits: LowerHex for 0-9 and a-f,
// UpperHex for A-F, 0 for any other byte.
const (
	LowerHex = 1 << iota
	UpperHex
	AnyHex = LowerHex | UpperHex
)

// HexClass is LowerHex, UpperHex or 0 for each byte.
var HexClass = [256]uint8{
	'0': LowerHex, '1': LowerHex, '2': LowerHex, '3': LowerHex, '4': LowerHex, '5': LowerHex, '6': LowerHex, '7': LowerHex, '8': LowerHex, '9': LowerHex,
	'a': LowerHex, 'b': LowerHex, 'c': LowerHex, 'd': LowerHex, 'e': LowerHex, 'f': LowerHex,
	'A': UpperHex, 'B': UpperHex, 'C': UpperHex, 'D': UpperHex, 'E': UpperHex, 'F': UpperHex,
}

// uuidShaped reports whether every byte of s stands where a UUID
// (8-4-4-4-12) has it: '-' at 8, 13, 18 and 23, else a hex digit of class.
func uuidShaped(s string, class uint8) bool {
	for i := 0; i < len(s); i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return false
			}
		} else if HexClass[s[i]]&class == 0 {
			return false
		}
	}
	return true
}

// IsUUID reports whether s is a canonical lower-case UUID.
func IsUUID(s string) bool { return len(s) == 36 && uuidShaped(s, LowerHex) }

// IsUUIDAnyCase reports whether s is UUID-shaped, hex digits of either case.
func IsUUIDAnyCase(s string) bool { return len(s) == 36 && uuidShaped(s, AnyHex) }

// UUIDPrefix reports whether s can start a UUID-shaped id (either case).
func UUIDPrefix(s string) bool { return len(s) <= 36 && uuidShaped(s, AnyHex) }

// IsLowerHex reports whether s is a non-empty run of lower-case hex digits.
func IsLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if HexClass[s[i]] != LowerHex {
			return false
		}
	}
	return s != ""
}
