package bwkv

import (
	"context"
	"errors"
	"time"
)

// Check verifies the database's structure (docs/crash-safety.md, I5) and returns every
// problem found, joined. Its check of the data files is exact beside
// background checkpoints and GC rounds (checkFiles); the tree's walk is
// exact on a quiescent database, and under concurrent writes Check
// retries a transient mismatch a few times.
func (db *DB) Check(ctx context.Context) error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err = errors.Join(db.tree.Check(), db.checkFiles()); err == nil {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return err
}
