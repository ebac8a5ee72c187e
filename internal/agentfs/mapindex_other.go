//go:build !unix

package agentfs

// MapIndexFile is ReadIndexFile where files cannot be mapped (mapped is false).
func MapIndexFile(path string) (b []byte, mapped bool, err error) {
	b, err = ReadIndexFile(path)
	return b, false, err
}

// UnmapIndexFile does nothing where MapIndexFile does not map.
func UnmapIndexFile([]byte) {}

// ReleaseIndexFile does nothing where MapIndexFile does not map.
func ReleaseIndexFile([]byte) {}
