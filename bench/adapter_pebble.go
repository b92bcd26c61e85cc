package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// Pebble settings: tuned the way Pebble's own benchmark tool (cmd/pebble)
// and its write-heavy users tune it, for the same memory as bwkv: block
// cache = the shared budget; 64 MiB memtables with writes stopping at 4
// queued (a user picking Pebble for writes never keeps the 4 MiB default);
// L0 compaction at 2 files and no L0 write stop; LBase 64 MiB; 32 KiB data
// blocks, 256 KiB index blocks and 10-bit bloom filters on every level but
// the last; compression off (as for every engine); value separation into
// blob files for values of at least ValueThreshold bytes (newest format);
// WAL on; relaxed writes with Sync=false, durable with Sync=true.
//
// Pebble has no transactions. "pebble" does an update as a blind Set
// (update_mode=blind_set, flagged in the report); "pebble-rmw" reads the
// key before each Set (the same work as a read-modify-write transaction,
// without its atomicity). An rw_txn read goes through an indexed batch.

func init() {
	Register("pebble", openPebble)
	Register("pebble-rmw", func(cfg Config) (Engine, error) {
		e, err := openPebble(cfg)
		if err != nil {
			return nil, err
		}
		e.(*pebbleEngine).rmw = true
		return e, nil
	})
}

type pebbleEngine struct {
	db   *pebble.DB
	wo   *pebble.WriteOptions
	comp string // the compression setting, for Info
	rmw  bool   // read the key before each Set (engine "pebble-rmw")
}

func openPebble(cfg Config) (Engine, error) {
	cache := pebble.NewCache(cfg.CacheBytes)
	defer cache.Unref() // the DB holds its own reference
	opts := &pebble.Options{
		Cache:                       cache,
		FormatMajorVersion:          pebble.FormatNewest,
		Logger:                      quietPebbleLogger{},
		L0CompactionThreshold:       2,
		L0StopWritesThreshold:       1000,
		LBaseMaxBytes:               64 << 20,
		MaxOpenFiles:                16384,
		MemTableSize:                64 << 20,
		MemTableStopWritesThreshold: 4,
		CompactionConcurrencyRange:  func() (int, int) { return 1, 3 },
	}
	for i := range opts.Levels {
		l := &opts.Levels[i]
		l.BlockSize = 32 << 10
		l.IndexBlockSize = 256 << 10
		l.FilterPolicy = bloom.FilterPolicy(10)
		l.FilterType = pebble.TableFilter
	}
	opts.Levels[len(opts.Levels)-1].FilterPolicy = pebble.NoFilterPolicy
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

func (e *pebbleEngine) Update(key, value []byte) error {
	if e.rmw {
		v, closer, err := e.db.Get(key)
		if err == nil {
			_ = v
			err = closer.Close()
		}
		if err != nil && !errors.Is(err, pebble.ErrNotFound) {
			return err
		}
	}
	return e.db.Set(key, value, e.wo)
}

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
		UpdateMode: map[bool]string{false: "blind_set", true: "get_then_set"}[e.rmw],
		Settings:   e.comp + "; block cache = budget; 64 MiB memtables x4; L0 2/1000; LBase 64 MiB; 32 KiB blocks; bloom 10; value separation >= threshold; FormatNewest",
	}
}

// Close closes the DB; KVBENCH_PEBBLE_STATS=1 in the environment first
// prints Pebble's metrics (WAL and per-level bytes written, write
// amplification) to stderr, the engine's own counters for a cross-check
// of the write_bytes column (not part of the result row).
func (e *pebbleEngine) Close() error {
	if os.Getenv("KVBENCH_PEBBLE_STATS") != "" {
		fmt.Fprintln(os.Stderr, e.db.Metrics().String())
	}
	return e.db.Close()
}
