//go:build !unix

package dirnames

import "os"

func readCache(path string) ([]byte, error) { return os.ReadFile(path) }
