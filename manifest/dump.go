package manifest

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/vfs"
)

// ReadEdits returns the live manifest file's name and its edits in order,
// for inspection tools (bwkv manifest dump). It only reads. A torn tail
// ends the list, as on Open; a damaged record followed by a valid one is a
// *base.CorruptionError.
func ReadEdits(fsys vfs.FS, dir string) (string, []*Edit, error) {
	num, err := readCurrent(fsys, dir)
	if err != nil {
		return "", nil, err
	}
	path := filepath.Join(dir, manifestName(num))
	data, err := readFile(fsys, path)
	if err != nil {
		return path, nil, fmt.Errorf("manifest: read %s: %w", path, err)
	}
	var edits []*Edit
	for off, i := 0, 0; off < len(data); i++ {
		payload, size, ok := frameAt(data, off)
		if !ok {
			if p := nextValidFrame(data, off+1); p >= 0 {
				return path, edits, &base.CorruptionError{File: path, Offset: int64(off),
					Reason: fmt.Sprintf("record %d is damaged but a valid record follows at offset %d", i, p)}
			}
			return path, edits, nil
		}
		e, err := DecodeEdit(payload)
		if err != nil {
			return path, edits, locate(err, path, int64(off), i)
		}
		edits = append(edits, e)
		off += size
	}
	if len(edits) == 0 {
		return path, nil, errors.New("manifest: " + path + " holds no edit")
	}
	return path, edits, nil
}
