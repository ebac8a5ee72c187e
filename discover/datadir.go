package discover

// DataDirer is implemented by adapters that read an agent's files: DataDir is the
// directory the agent keeps them in, as this Env defines it (the agent's own env
// overrides included). `doctor` uses it to tell "not installed" (no such
// directory) from "cannot be read".
type DataDirer interface {
	DataDir(env *Env) string
}
