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
func (db *DB) checkFiles() error {
	if db.man == nil {
		return nil
	}
	st := db.man.State()
	names, err := db.fs.List(db.dir)
	if err != nil {
		return fmt.Errorf("bwkv: check: %w", err)
	}
	onDisk := map[manifest.FileID]bool{}
	var errs []error
	writing := manifest.FileID(db.writing.Load())
	for _, n := range names {
		if id, ok := checkpoint.ParseDataFileName(n); ok {
			onDisk[id] = true
			// A retired file awaiting deletion (the GC unlinks it once
			// no reader holds it; Open deletes it) is not an orphan.
			_, pending := st.PendingDeletes[id]
			// A read-only open leaves a crashed checkpoint's file (at or
			// above the next file id) for the next read-write open to
			// delete; it is not damage.
			leftover := db.opts.ReadOnly && id >= st.NextFileID
			if _, named := st.Files[id]; !named && !pending && !leftover && id != writing {
				errs = append(errs, fmt.Errorf("bwkv: check: orphan data file %s", n))
			}
		}
	}
	for id := range st.Files {
		if !onDisk[id] {
			errs = append(errs, fmt.Errorf("bwkv: check: manifest names missing data file %s", checkpoint.DataFileName(id)))
		}
	}
	return errors.Join(errs...)
}
