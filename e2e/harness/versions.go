package harness

// The agent versions the suite drives (e2e/npm pins them). Every test runs the
// newest; the older pin of each agent runs only in the tests where versions
// differ most (smoke and read side), which keeps the suite's time about flat.
const (
	ClaudeNewest = "2.1.332"
	ClaudeOldest = "2.1.197"
	CodexNewest  = "0.171.0"
	CodexOlder   = "0.169.0"
	PiNewest     = "1.6.0"
	PiOlder      = "0.73.1"
)

// CodexVersions and PiVersions are the pins a version-covering test runs,
// oldest first.
var (
	CodexVersions = []string{CodexOlder, CodexNewest}
	PiVersions    = []string{PiOlder, PiNewest}
)
