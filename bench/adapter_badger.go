package bench

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Badger settings: compression off; the shared budget split between the
// block cache (3/4) and the index cache (1/4), so Badger holds the same
// memory as the others (its default index cache is unbounded);
// ValueThreshold = the shared value-separation threshold (values at or
// above it go to the value log); SyncWrites = durable; the logger silenced.
// Updates are real read-modify-write transactions (ErrConflict counts in
// err_op). Everything else is Badger's default (64 MiB memtables, conflict
// detection on).

func init() {
	Register("badger", openBadger)
	conflictErrs = append(conflictErrs, badger.ErrConflict)
}

type badgerEngine struct {
	db   *badger.DB
	sync bool
	comp options.CompressionType
}

func openBadger(cfg Config) (Engine, error) {
	comp := options.None
	switch cfg.Compression {
	case "fast":
		comp = options.Snappy
	case "good":
		comp = options.ZSTD
	}
	opts := badger.DefaultOptions(cfg.Dir).
		WithCompression(comp).
		WithBlockCacheSize(cfg.CacheBytes - cfg.CacheBytes/4).
		WithIndexCacheSize(cfg.CacheBytes / 4).
		WithValueThreshold(int64(cfg.ValueThreshold)).
		WithSyncWrites(cfg.Durability == Durable).
		WithLogger(nil)
	db, err := badger.Open(opts)
	if err != nil {
		return nil, err
	}
	return &badgerEngine{db: db, sync: cfg.Durability == Durable, comp: comp}, nil
}

func (e *badgerEngine) Read(dst, key []byte, path ReadPath) ([]byte, error) {
	txn := e.db.NewTransaction(path == RWTxn)
	defer txn.Discard()
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return dst, ErrNotFound
	}
	if err != nil {
		return dst, err
	}
	err = item.Value(func(v []byte) error {
		dst = append(dst, v...)
		return nil
	})
	if err != nil {
		return dst, err
	}
	if path == RWTxn {
		return dst, txn.Commit()
	}
	return dst, nil
}

func (e *badgerEngine) Update(key, value []byte) error {
	txn := e.db.NewTransaction(true)
	defer txn.Discard()
	item, err := txn.Get(key)
	if err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
		return err
	}
	if err == nil {
		sink := 0
		if err := item.Value(func(v []byte) error { sink += len(v); return nil }); err != nil {
			return err
		}
	}
	if err := txn.Set(key, value); err != nil {
		return err
	}
	return txn.Commit()
}

func (e *badgerEngine) Scan(lo, hi []byte, limit int, path ReadPath) (int, error) {
	txn := e.db.NewTransaction(path == RWTxn)
	defer txn.Discard()
	// Values are read one by one below; Badger's prefetching goroutines
	// would only add work for values stored inline in the LSM.
	it := txn.NewIterator(badger.IteratorOptions{Prefix: lo[:commonPrefixLen(lo, hi)]})
	n, sink := 0, 0
	for it.Seek(lo); it.Valid() && n < limit; it.Next() {
		item := it.Item()
		k := item.Key()
		if hi != nil && bytes.Compare(k, hi) >= 0 {
			break
		}
		if err := item.Value(func(v []byte) error { sink += len(v); return nil }); err != nil {
			it.Close()
			return n, err
		}
		sink += int(k[0])
		n++
	}
	_ = sink
	it.Close() // before Commit: Badger panics on an open iterator
	if path == RWTxn {
		return n, txn.Commit()
	}
	return n, nil
}

// commonPrefixLen is the length of the longest common prefix of a and b,
// Badger's iterator prefix (it lets Badger skip tables outside the range).
func commonPrefixLen(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func (e *badgerEngine) Begin() (Batch, error) {
	return &badgerBatch{db: e.db, txn: e.db.NewTransaction(true)}, nil
}

type badgerBatch struct {
	db  *badger.DB
	txn *badger.Txn
}

// Put copies the key: Badger keeps the caller's slices until Commit and the
// harness reuses its key buffer.
func (b *badgerBatch) Put(key, value []byte) error {
	k := append([]byte(nil), key...)
	err := b.txn.Set(k, value)
	if errors.Is(err, badger.ErrTxnTooBig) {
		// Split an oversized batch: commit what we have and go on.
		if err := b.txn.Commit(); err != nil {
			return err
		}
		b.txn = b.db.NewTransaction(true)
		err = b.txn.Set(k, value)
	}
	return err
}

func (b *badgerBatch) Commit() error { return b.txn.Commit() }
func (b *badgerBatch) Rollback() error {
	b.txn.Discard()
	return nil
}

// Settle syncs and flattens the LSM into one level. Memtables are not
// flushed (Badger has no public call for it).
func (e *badgerEngine) Settle() error {
	if err := e.db.Sync(); err != nil {
		return err
	}
	return e.db.Flatten(2)
}

// SettleSpace is the post-measure settle (--settle-after): Sync, Flatten,
// then value-log GC (discard ratio 0.5) until Badger reports nothing to
// rewrite, at most badgerGCRounds rounds.
func (e *badgerEngine) SettleSpace() error {
	if err := e.Settle(); err != nil {
		return err
	}
	for i := 0; i < badgerGCRounds; i++ {
		err := e.db.RunValueLogGC(0.5)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("badger value-log GC: %w", err)
		}
	}
	return nil
}

// badgerGCRounds bounds the value-log GC loop of SettleSpace.
const badgerGCRounds = 100

func (e *badgerEngine) Info() Info {
	return Info{
		Durability: fmt.Sprintf("badger.SyncWrites=%t", e.sync),
		UpdateMode: "rmw_txn",
		Settings:   fmt.Sprintf("compression %s; block cache 3/4 + index cache 1/4 of budget; ValueThreshold = threshold; logger off", []string{"None", "Snappy", "ZSTD"}[e.comp]),
	}
}

func (e *badgerEngine) Close() error { return e.db.Close() }
