package bench

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// bbolt settings (bench/README.md fairness): one bucket in one file; bbolt does not
// compress and has no cache of its own (it reads through mmap, so the OS
// page cache is its cache and the shared budget does not apply). Relaxed
// maps to NoSync=true (no fsync at commit; note that bbolt documents NoSync
// as unsafe across a power loss, unlike the other engines' relaxed modes),
// durable to NoSync=false. An rw_txn read is a writable transaction
// committed after the get, which in bbolt writes a meta page. Everything else
// is as bbolt's users tune it for write throughput: NoFreelistSync (the
// freelist is rebuilt at open instead of written at every commit) and the
// hashmap freelist (O(1) allocation instead of the array's scan).

func init() { Register("bbolt", openBbolt) }

var bboltBucket = []byte("kv")

type bboltEngine struct {
	db *bolt.DB
}

func openBbolt(cfg Config) (Engine, error) {
	if _, err := cfg.compressed("bbolt", false); err != nil {
		return nil, err
	}
	db, err := bolt.Open(filepath.Join(cfg.Dir, "bbolt.db"), 0o644, &bolt.Options{
		NoSync:         cfg.Durability == Relaxed,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bboltBucket)
		return err
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &bboltEngine{db: db}, nil
}

func (e *bboltEngine) Read(dst, key []byte, path ReadPath) ([]byte, error) {
	tx, err := e.db.Begin(path == RWTxn)
	if err != nil {
		return dst, err
	}
	v := tx.Bucket(bboltBucket).Get(key)
	found := v != nil
	dst = append(dst, v...) // copy out before the mmap'd page may go
	if path == RWTxn {
		err = tx.Commit()
	} else {
		err = tx.Rollback()
	}
	if err == nil && !found {
		err = ErrNotFound
	}
	return dst, err
}

func (e *bboltEngine) Update(key, value []byte) error {
	return e.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bboltBucket)
		sink := len(b.Get(key))
		_ = sink
		return b.Put(key, value)
	})
}

func (e *bboltEngine) Scan(lo, hi []byte, limit int, path ReadPath) (int, error) {
	tx, err := e.db.Begin(path == RWTxn)
	if err != nil {
		return 0, err
	}
	c := tx.Bucket(bboltBucket).Cursor()
	n, sink := 0, 0
	for k, v := c.Seek(lo); k != nil && n < limit; k, v = c.Next() {
		if hi != nil && bytes.Compare(k, hi) >= 0 {
			break
		}
		sink += int(k[0]) + len(v)
		n++
	}
	_ = sink
	if path == RWTxn {
		return n, tx.Commit()
	}
	return n, tx.Rollback()
}

func (e *bboltEngine) Begin() (Batch, error) {
	tx, err := e.db.Begin(true)
	if err != nil {
		return nil, err
	}
	return &bboltBatch{tx: tx, b: tx.Bucket(bboltBucket)}, nil
}

type bboltBatch struct {
	tx *bolt.Tx
	b  *bolt.Bucket
}

// Put copies the key: bbolt keeps the caller's slices for the life of the
// transaction and the harness reuses its key buffer.
func (b *bboltBatch) Put(key, value []byte) error {
	return b.b.Put(append([]byte(nil), key...), value)
}
func (b *bboltBatch) Commit() error { return b.tx.Commit() }
func (b *bboltBatch) Rollback() error {
	err := b.tx.Rollback()
	if errors.Is(err, bolterrors.ErrTxClosed) {
		return nil
	}
	return err
}

// Settle fsyncs the file (a B+tree has nothing to compact).
func (e *bboltEngine) Settle() error { return e.db.Sync() }

func (e *bboltEngine) Info() Info {
	return Info{
		Durability: fmt.Sprintf("bbolt.NoSync=%t", e.db.NoSync),
		UpdateMode: "rmw_txn",
		Settings:   "no compression (none in bbolt); no cache (mmap + OS page cache); NoFreelistSync; hashmap freelist",
	}
}

func (e *bboltEngine) Close() error { return e.db.Close() }
