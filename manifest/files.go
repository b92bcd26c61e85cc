package manifest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/vfs"
)

// File names in the manifest's directory.
const (
	currentName    = "CURRENT"
	currentTemp    = "CURRENT.tmp"
	manifestPrefix = "MANIFEST-"
	// maxCurrentSize bounds what readCurrent accepts.
	maxCurrentSize = 64
)

// manifestName returns the file name of manifest number num.
func manifestName(num uint64) string {
	return fmt.Sprintf("%s%06d", manifestPrefix, num)
}

// parseManifestName returns the number of a MANIFEST-%06d name.
func parseManifestName(name string) (uint64, bool) {
	digits, ok := strings.CutPrefix(name, manifestPrefix)
	if !ok || len(digits) < 6 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	num, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || num == 0 || manifestName(num) != name {
		return 0, false
	}
	return num, true
}

// readFile returns the whole contents of the named file.
func readFile(fsys vfs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
		return nil, err
	}
	return buf, nil
}

// readCurrent returns the manifest number CURRENT names. A missing CURRENT
// returns an error wrapping fs.ErrNotExist.
func readCurrent(fsys vfs.FS, dir string) (uint64, error) {
	path := filepath.Join(dir, currentName)
	fi, err := fsys.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("manifest: read %s: %w", path, err)
	}
	if fi.Size() > maxCurrentSize {
		return 0, &base.CorruptionError{File: path, Offset: 0, Reason: fmt.Sprintf("%d bytes, not a manifest name", fi.Size())}
	}
	data, err := readFile(fsys, path)
	if err != nil {
		return 0, fmt.Errorf("manifest: read %s: %w", path, err)
	}
	name, ok := strings.CutSuffix(string(data), "\n")
	num, ok2 := parseManifestName(name)
	if !ok || !ok2 {
		return 0, &base.CorruptionError{File: path, Offset: 0, Reason: fmt.Sprintf("content %q does not name a manifest", data)}
	}
	return num, nil
}

// checkNoCurrent decides whether a directory without CURRENT may be treated
// as holding no manifest. CURRENT is only ever replaced by an atomic
// rename, so once durable it never disappears on a crash. Before it first
// exists, only the creating rotation has written: MANIFEST-000001 with at
// most two records (snapshot and the first edit). Anything more means
// CURRENT was lost after the manifest was in use: corruption, never a
// fresh start that would orphan the data files.
func checkNoCurrent(fsys vfs.FS, dir string) error {
	names, err := fsys.List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("manifest: list %s: %w", dir, err)
	}
	current := filepath.Join(dir, currentName)
	for _, name := range names {
		num, ok := parseManifestName(name)
		if !ok {
			continue
		}
		if num > 1 {
			return &base.CorruptionError{File: current, Offset: -1, Reason: "missing, but " + name + " exists"}
		}
		path := filepath.Join(dir, name)
		data, err := readFile(fsys, path)
		if err != nil {
			return fmt.Errorf("manifest: read %s: %w", path, err)
		}
		if n := countFrames(data); n > 2 {
			return &base.CorruptionError{File: current, Offset: -1,
				Reason: fmt.Sprintf("missing, but %s holds %d records", name, n)}
		}
	}
	return nil
}
