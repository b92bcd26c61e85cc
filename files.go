package bwkv

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/bwkv/bwkv/checkpoint"
	"github.com/bwkv/bwkv/manifest"
	"github.com/bwkv/bwkv/pool"
)

// The data files in the directory: their names and handles, the orphans
// Open removes and the file set Check verifies (docs/crash-safety.md).

// dataPath returns the path of data file id.
func (db *DB) dataPath(id manifest.FileID) string {
	return filepath.Join(db.dir, checkpoint.DataFileName(id))
}

// openDataFile opens and validates data file id (pool.Files' opener).
func (db *DB) openDataFile(id uint64) (*pool.File, error) {
	name := db.dataPath(manifest.FileID(id))
	vf, err := db.fs.Open(name)
	if err != nil {
		return nil, fmt.Errorf("bwkv: open data file %s: %w", name, err)
	}
	f, err := pool.OpenFile(vf, name)
	if err != nil {
		vf.Close()
		return nil, err
	}
	return f, nil
}

// removeOrphans deletes every data file the manifest's file set does not
// name: those at or above its next file id, those whose id a checkpoint
// reserved (step 2) but never published (a crash before step 4), and those
// recorded as pending deletes.
func (db *DB) removeOrphans(st *manifest.State) error {
	names, err := db.fs.List(db.dir)
	if err != nil {
		return fmt.Errorf("bwkv: open %s: %w", db.dir, err)
	}
	removed := false
	for _, n := range names {
		id, ok := checkpoint.ParseDataFileName(n)
		if !ok {
			continue
		}
		_, pending := st.PendingDeletes[id]
		_, named := st.Files[id]
		if !named || pending {
			if err := db.fs.Remove(filepath.Join(db.dir, n)); err != nil {
				return fmt.Errorf("bwkv: open %s: remove orphan %s: %w", db.dir, n, err)
			}
			removed = true
		}
	}
	if removed {
		return db.fs.SyncDir(db.dir)
	}
	return nil
}

// checkFiles verifies that the manifest names only data files that exist
// and that no other data file remains (docs/crash-safety.md, I5).
//
// It is exact while checkpoints and GC rounds create, publish and delete
// files beside it, by the order of its looks: the manifest's files (before),
// the directory, the file being written, the manifest's files again
// (after). A file the listing shows that neither manifest look names nor
// the writing mark holds is an orphan: one created before the listing and
// published after the first look is in the second, and one still being
// written then carries the mark, which is set before the file is created
// and cleared only after the commit that names it. A file both looks name
// that the listing lacks is missing: a file leaves the directory only after
// a commit has retired it, so one deleted before the listing is not in the
// second look's files.
func (db *DB) checkFiles() error {
	if db.man == nil {
		return nil
	}
	before := db.manifestFiles()
	if f := db.hooks.checkListing.Load(); f != nil {
		(*f)()
	}
	names, err := db.fs.List(db.dir)
	if err != nil {
		return fmt.Errorf("bwkv: check: %w", err)
	}
	writing := manifest.FileID(db.writing.Load())
	after := db.manifestFiles()
	nextFile, _ := db.man.Counters()
	onDisk := map[manifest.FileID]bool{}
	var errs []error
	for _, n := range names {
		id, ok := checkpoint.ParseDataFileName(n)
		if !ok {
			continue
		}
		onDisk[id] = true
		// A read-only open leaves a crashed checkpoint's file (at or
		// above the next file id) for the next read-write open to
		// delete; it is not damage.
		leftover := db.opts.ReadOnly && id >= nextFile
		// A retired file awaiting deletion (the GC unlinks it once no
		// reader holds it; Open deletes it) is not an orphan.
		if !before.has(id) && !after.has(id) && !leftover && id != writing {
			errs = append(errs, fmt.Errorf("bwkv: check: orphan data file %s", n))
		}
	}
	for id := range before.files {
		if _, still := after.files[id]; still && !onDisk[id] {
			errs = append(errs, fmt.Errorf("bwkv: check: manifest names missing data file %s", checkpoint.DataFileName(id)))
		}
	}
	return errors.Join(errs...)
}

// fileSet is one look at the manifest's data files: those it names and
// those it retired, awaiting deletion.
type fileSet struct {
	files, pending map[manifest.FileID]struct{}
}

// has reports whether the manifest named or retired file id.
func (s fileSet) has(id manifest.FileID) bool {
	_, named := s.files[id]
	_, pending := s.pending[id]
	return named || pending
}

// manifestFiles returns the manifest's data files and retired files now,
// in O(files) (not State's O(pages) copy).
func (db *DB) manifestFiles() fileSet {
	files, pending, _ := db.man.Files()
	s := fileSet{files: make(map[manifest.FileID]struct{}, len(files)), pending: make(map[manifest.FileID]struct{}, len(pending))}
	for _, f := range files {
		s.files[f.ID] = struct{}{}
	}
	for _, id := range pending {
		s.pending[id] = struct{}{}
	}
	return s
}
