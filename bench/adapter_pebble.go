package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Pebble settings (BENCH.md fairness): no compression on any level, block
// cache = the shared budget, value separation into blob files for values of
// at least ValueThreshold bytes (needs the newest format), WAL on; relaxed
// writes with Sync=false, durable with Sync=true. Pebble has no
// transactions: an update is a blind Set (update_mode=blind_set, flagged in
// the report) and an rw_txn read goes through an indexed batch. Everything
// else is Pebble's default (4 MiB memtable, L0 compaction threshold 4).

func init() { Register("pebble", openPebble) }

type pebbleEngine struct {
	db   *pebble.DB
	wo   *pebble.WriteOptions
	comp string // the compression setting, for Info
}

func openPebble(cfg Config) (Engine, error) {
	cache := pebble.NewCache(cfg.CacheBytes)
	defer cache.Unref() // the DB holds its own reference
	opts := &pebble.Options{
		Cache:              cache,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             quietPebbleLogger{},
	}
	comp, compName := pebble.DBCompressionNone, "no compression"
	switch cfg.Compression {
	case "fast":
		comp, compName = pebble.DBCompressionFastest, "DBCompressionFastest"
	case "good":
		comp, compName = pebble.DBCompressionGood, "DBCompressionGood"
	}
	opts.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return comp })
	threshold := cfg.ValueThreshold
	opts.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
		return pebble.ValueSeparationPolicy{
			Enabled:               threshold > 0,
			MinimumSize:           max(threshold, 1),
			MaxBlobReferenceDepth: 10,
			RewriteMinimumAge:     5 * time.Minute,
			TargetGarbageRatio:    0.2,
		}
	}
	opts.EnsureDefaults()
	db, err := pebble.Open(cfg.Dir, opts)
	if err != nil {
		return nil, err
	}
	wo := pebble.NoSync
	if cfg.Durability == Durable {
		wo = pebble.Sync
	}
	return &pebbleEngine{db: db, wo: wo, comp: compName}, nil
}

// quietPebbleLogger drops Pebble's informational log lines and keeps errors.
type quietPebbleLogger struct{}

func (quietPebbleLogger) Infof(string, ...interface{}) {}
func (quietPebbleLogger) Errorf(format string, args ...interface{}) {
	pebble.DefaultLogger.Errorf(format, args...)
}
func (quietPebbleLogger) Fatalf(format string, args ...interface{}) {
	pebble.DefaultLogger.Fatalf(format, args...)
}

func (e *pebbleEngine) Read(dst, key []byte, path ReadPath) ([]byte, error) {
	var v []byte
	var closer interface{ Close() error }
	var err error
	if path == RWTxn {
		b := e.db.NewIndexedBatch()
		defer b.Close()
		v, closer, err = b.Get(key)
	} else {
		v, closer, err = e.db.Get(key)
	}
	if errors.Is(err, pebble.ErrNotFound) {
		return dst, ErrNotFound
	}
	if err != nil {
		return dst, err
	}
	dst = append(dst, v...)
	return dst, closer.Close()
}

func (e *pebbleEngine) Update(key, value []byte) error { return e.db.Set(key, value, e.wo) }

func (e *pebbleEngine) Scan(lo, hi []byte, limit int, path ReadPath) (int, error) {
	io := &pebble.IterOptions{LowerBound: lo, UpperBound: hi}
	var it *pebble.Iterator
	var err error
	if path == RWTxn {
		b := e.db.NewIndexedBatch()
		defer b.Close()
		it, err = b.NewIter(io)
	} else {
		it, err = e.db.NewIter(io)
	}
	if err != nil {
		return 0, err
	}
	n, sink := 0, 0
	for ok := it.SeekGE(lo); ok && n < limit; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return n, err
		}
		sink += int(it.Key()[0]) + len(v)
		n++
	}
	_ = sink
	return n, it.Close()
}

func (e *pebbleEngine) Begin() (Batch, error) {
	return &pebbleBatch{b: e.db.NewBatch(), wo: e.wo}, nil
}

type pebbleBatch struct {
	b  *pebble.Batch
	wo *pebble.WriteOptions
}

func (b *pebbleBatch) Put(key, value []byte) error { return b.b.Set(key, value, nil) }
func (b *pebbleBatch) Commit() error {
	err := b.b.Commit(b.wo)
	b.b.Close()
	return err
}
func (b *pebbleBatch) Rollback() error { return b.b.Close() }

// Settle flushes the memtable and compacts the whole key space, so every
// engine starts the measurement from its settled on-disk shape.
func (e *pebbleEngine) Settle() error {
	if err := e.db.Flush(); err != nil {
		return err
	}
	return e.db.Compact(context.Background(), []byte{0}, []byte{0xff, 0xff}, true)
}

func (e *pebbleEngine) Info() Info {
	return Info{
		Durability: fmt.Sprintf("pebble.WriteOptions.Sync=%t", e.wo.Sync),
		UpdateMode: "blind_set",
		Settings:   e.comp + "; block cache = budget; value separation >= threshold; FormatNewest",
	}
}

func (e *pebbleEngine) Close() error { return e.db.Close() }
