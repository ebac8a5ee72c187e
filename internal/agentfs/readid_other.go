//go:build !unix

package agentfs

import "os"

// ReadFileID is ReadFile that also returns the identity of the file it read
// (size and modification time only on this platform).
func ReadFileID(path string) ([]byte, FileID, error) {
	f, err := Open(path)
	if err != nil {
		return nil, FileID{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, FileID{}, err
	}
	b, err := os.ReadFile(path)
	return b, FileID{Size: st.Size(), MtimeNs: st.ModTime().UnixNano()}, err
}
