package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/bwkv/bwkv"
)

// bwkv settings (bench/README.md fairness): Compression per --compression
// (none, fast = S2, good = zstd), CacheBytes = the shared budget, value
// separation at the shared threshold (BlobThreshold = --value-threshold,
// 8 KiB by default, as the other engines; 0 keeps bwkv's default 4 KiB),
// Durability Relaxed / Sync. Updates are read-modify-write transactions
// run by DB.Update, as a Go user writes them: a writer meeting another's
// uncommitted version of its key waits for it, and a first-committer-wins
// conflict re-runs the function (Options.MaxUpdateRetries); an
// ErrConflict that survives the retries counts in err_op. Reads use a fresh snapshot each (the hot
// path docs/guarantees.md promises allocation-free) and GetAppend into the
// worker's buffer. Settle is DB.Compact (checkpoint, every leaf's chain
// consolidated, log rotated, GC until none has work), as Pebble's settle
// flushes and compacts its whole key space. Everything else is the
// engine's default. The engine "bwkv-put" updates by DB.Put instead (no
// read first: update_mode=blind_set, the work of Pebble's blind Set), run
// when asked for.

func init() {
	Register("bwkv", openBwkv)
	Register("bwkv-put", func(cfg Config) (Engine, error) {
		e, err := openBwkv(cfg)
		if err == nil {
			e.(*bwkvEngine).blind = true
		}
		return e, err
	})
	conflictErrs = append(conflictErrs, bwkv.ErrConflict)
}

type bwkvEngine struct {
	db     *bwkv.DB
	sync   bool
	comp   bwkv.Compression
	blob   int       // the blob threshold in effect (DB.Options)
	report func()    // KVBENCH_BWKV_STATS: prints the event sums (nil: off)
	bufs   sync.Pool // *[]byte scratch for the get of a read-modify-write
	blind  bool      // updates are DB.Put (engine "bwkv-put")
}

func openBwkv(cfg Config) (Engine, error) {
	dur := bwkv.DurabilityRelaxed
	if cfg.Durability == Durable {
		dur = bwkv.DurabilitySync
	}
	comp := bwkv.CompressionNone
	switch cfg.Compression {
	case "fast":
		comp = bwkv.CompressionS2
	case "good":
		comp = bwkv.CompressionZstd
	}
	opts := &bwkv.Options{
		Durability:    dur,
		CacheBytes:    cfg.CacheBytes,
		Compression:   comp,
		BlobThreshold: cfg.ValueThreshold,
	}
	var report func()
	if os.Getenv("KVBENCH_BWKV_STATS") != "" {
		opts.EventListener, report = statsListener(os.Getenv("KVBENCH_BWKV_EVENTS") != "")
	}
	db, err := bwkv.Open(cfg.Dir, opts)
	if err != nil {
		return nil, err
	}
	e := &bwkvEngine{db: db, sync: cfg.Durability == Durable, comp: comp, blob: db.Options().BlobThreshold, report: report}
	e.bufs.New = func() any { b := make([]byte, 0, 1024); return &b }
	return e, nil
}

func (e *bwkvEngine) Read(dst, key []byte, path ReadPath) ([]byte, error) {
	if path == RWTxn {
		tx, err := e.db.Begin()
		if err != nil {
			return dst, err
		}
		dst, err = tx.GetAppend(dst, key)
		if err != nil {
			tx.Rollback()
			return dst, mapBwkvErr(err)
		}
		return dst, tx.Commit()
	}
	snap, err := e.db.NewSnapshot()
	if err != nil {
		return dst, err
	}
	dst, err = snap.GetAppend(dst, key)
	if cerr := snap.Close(); err == nil {
		err = cerr
	}
	return dst, mapBwkvErr(err)
}

func mapBwkvErr(err error) error {
	if errors.Is(err, bwkv.ErrNotFound) {
		return ErrNotFound
	}
	return err
}

func (e *bwkvEngine) Update(key, value []byte) error {
	if e.blind {
		return e.db.Put(key, value)
	}
	return e.db.Update(func(tx *bwkv.Txn) error {
		bp := e.bufs.Get().(*[]byte)
		var err error
		*bp, err = tx.GetAppend((*bp)[:0], key)
		e.bufs.Put(bp)
		if err != nil && !errors.Is(err, bwkv.ErrNotFound) {
			return err
		}
		return tx.Put(key, value)
	})
}

func (e *bwkvEngine) Scan(lo, hi []byte, limit int, path ReadPath) (int, error) {
	opts := &bwkv.IterOptions{LowerBound: lo, UpperBound: hi}
	var it *bwkv.Iter
	var err error
	var finish func() error
	if path == RWTxn {
		tx, berr := e.db.Begin()
		if berr != nil {
			return 0, berr
		}
		it, err = tx.NewIter(opts)
		finish = tx.Commit
		if err != nil {
			tx.Rollback()
			return 0, err
		}
	} else {
		snap, serr := e.db.NewSnapshot()
		if serr != nil {
			return 0, serr
		}
		it, err = snap.NewIter(opts)
		finish = snap.Close
		if err != nil {
			snap.Close()
			return 0, err
		}
	}
	n, sink := 0, 0
	for ok := it.SeekGE(lo); ok && n < limit; ok = it.Next() {
		sink += int(it.Key()[0]) + len(it.Value())
		n++
	}
	_ = sink
	err = it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if ferr := finish(); err == nil {
		err = ferr
	}
	return n, err
}

func (e *bwkvEngine) Begin() (Batch, error) {
	tx, err := e.db.Begin()
	if err != nil {
		return nil, err
	}
	return bwkvBatch{tx}, nil
}

type bwkvBatch struct{ tx *bwkv.Txn }

func (b bwkvBatch) Put(key, value []byte) error { return b.tx.Put(key, value) }
func (b bwkvBatch) Commit() error               { return b.tx.Commit() }
func (b bwkvBatch) Rollback() error {
	err := b.tx.Rollback()
	if errors.Is(err, bwkv.ErrTxnDone) {
		return nil
	}
	return err
}

// Settle runs DB.Compact: a checkpoint, then every leaf's chain
// consolidated, the log rotated and GC rounds (docs/crash-safety.md,
// "Settling an idle database").
func (e *bwkvEngine) Settle() error { return e.db.Compact(context.Background()) }

func (e *bwkvEngine) Info() Info {
	d := "bwkv.DurabilityRelaxed"
	if e.sync {
		d = "bwkv.DurabilitySync"
	}
	return Info{
		Durability: d,
		UpdateMode: map[bool]string{false: "rmw_txn", true: "blind_set"}[e.blind],
		Settings:   fmt.Sprintf("Compression %v; CacheBytes = budget; blob frames for values >= %d (BlobThreshold)", e.comp, e.blob),
	}
}

// statsListener sums stall, checkpoint and GC time for a profile session
// (KVBENCH_BWKV_STATS); report prints the sums to stderr (at Close, not in
// the result). With each (KVBENCH_BWKV_EVENTS as well), every checkpoint
// and stall is printed to stderr as it ends, with the time of day:
// "CKPT 15:04:05.000 DURATION BYTES FRAMES", "STALL 15:04:05.000 DURATION".
func statsListener(each bool) (_ *bwkv.EventListener, report func()) {
	var mu sync.Mutex
	var stalls, ckpts, rounds eventTimes
	report = func() {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stderr, "bwkv events: %s, %s, %s\n", stalls.format("stalls"), ckpts.format("checkpoints"), rounds.format("gc rounds"))
	}
	add := func(t *eventTimes, d time.Duration) {
		mu.Lock()
		t.add(d)
		mu.Unlock()
	}
	return &bwkv.EventListener{
		StallEnd: func(i bwkv.StallInfo) {
			if each {
				fmt.Fprintf(os.Stderr, "STALL %s %v\n", time.Now().Format("15:04:05.000"), i.Duration)
			}
			add(&stalls, i.Duration)
		},
		CheckpointEnd: func(i bwkv.CheckpointEndInfo) {
			if each {
				fmt.Fprintf(os.Stderr, "CKPT %s %v %d %d\n", time.Now().Format("15:04:05.000"), i.Duration, i.Bytes, i.Frames)
			}
			add(&ckpts, i.Duration)
		},
		GCRound: func(i bwkv.GCRoundInfo) { add(&rounds, i.Duration) },
	}, report
}

// eventTimes counts one kind of event with its total and longest duration.
type eventTimes struct {
	n          int
	sum, worst time.Duration
}

func (t *eventTimes) add(d time.Duration) { t.n++; t.sum += d; t.worst = max(t.worst, d) }

// format prints "N what TOTAL (longest WORST)".
func (t eventTimes) format(what string) string {
	return fmt.Sprintf("%d %s %v (longest %v)", t.n, what, t.sum, t.worst)
}

func (e *bwkvEngine) Close() error {
	if e.report != nil {
		// The engine's own counters for a profile session; not part of
		// the result row.
		fmt.Fprintln(os.Stderr, e.db.Stats().String())
		e.report()
	}
	return e.db.Close()
}
