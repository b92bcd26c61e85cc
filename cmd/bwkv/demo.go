package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/spf13/cobra"
)

func key(buf []byte, id uint64) []byte {
	buf = append(buf[:0], "user"...)
	return binary.BigEndian.AppendUint64(buf, id*0x9e3779b97f4a7c15)
}

func demoCmd() *cobra.Command {
	var o demoOpts
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run a mixed read/update/scan workload and print throughput and statistics",
		Example: `  bwkv demo
  bwkv demo --keys 50000 --secs 2 --dir /tmp/demo-db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return demo(&o) },
	}
	f := c.Flags()
	f.StringVar(&o.dir, "dir", "", "database directory (default: a temporary one, removed afterwards)")
	f.IntVar(&o.keys, "keys", 200_000, "keys to load")
	f.IntVar(&o.threads, "threads", 2, "worker goroutines")
	f.Float64Var(&o.secs, "secs", 5, "seconds to run the mixed workload")
	f.IntVar(&o.valSize, "value-size", 128, "value size in bytes")
	return c
}

type demoOpts struct {
	dir           string
	keys, threads int
	secs          float64
	valSize       int
}

func demo(o *demoOpts) error {
	if o.keys < 1 || o.threads < 1 || o.valSize < 0 {
		return errors.New("demo: --keys and --threads must be positive, --value-size not negative")
	}
	if o.dir == "" {
		d, err := os.MkdirTemp("", "bwkv-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		o.dir = d
	}
	db, err := bwkv.Open(o.dir, &bwkv.Options{Durability: bwkv.DurabilityRelaxed})
	if err != nil {
		return err
	}
	defer db.Close()
	val := make([]byte, o.valSize)
	start := time.Now()
	if err := demoLoad(db, o.keys, val); err != nil {
		return err
	}
	fmt.Printf("loaded %d keys in %v\n", o.keys, time.Since(start).Round(time.Millisecond))
	if err := db.Checkpoint(); err != nil {
		return err
	}
	var n demoCounts
	if err := demoMixed(db, o, val, &n); err != nil {
		return err
	}
	total := n.reads.Load() + n.updates.Load() + n.scans.Load()
	fmt.Printf("mixed 70/25/5 read/update/scan, %d threads, %.1fs: %d ops, %.0f ops/s (%d reads, %d updates, %d conflicts, %d scans of 100)\n",
		o.threads, o.secs, total, float64(total)/o.secs, n.reads.Load(), n.updates.Load(), n.conflicts.Load(), n.scans.Load())
	if err := db.Check(context.Background()); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	fmt.Println("structural check: ok")
	fmt.Print(db.Stats())
	return nil
}

// demoLoad puts keys keys of value val, 1000 per transaction.
func demoLoad(db *bwkv.DB, keys int, val []byte) error {
	var kb []byte
	for i := 0; i < keys; i += 1000 {
		err := db.Update(func(tx *bwkv.Txn) error {
			for j := i; j < i+1000 && j < keys; j++ {
				kb = key(kb, uint64(j))
				if err := tx.Put(kb, val); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// demoCounts counts the mixed workload's operations.
type demoCounts struct {
	reads, updates, scans, conflicts atomic.Int64
}

// demoMixed runs o.threads workers for o.secs seconds and returns the
// first error any of them met.
func demoMixed(db *bwkv.DB, o *demoOpts, val []byte, n *demoCounts) error {
	deadline := time.Now().Add(time.Duration(o.secs * float64(time.Second)))
	var wg sync.WaitGroup
	errc := make(chan error, o.threads)
	for t := 0; t < o.threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			if err := demoWorker(db, o.keys, val, uint64(t), deadline, n); err != nil {
				errc <- err
			}
		}(t)
	}
	wg.Wait()
	close(errc)
	return <-errc
}

// demoWorker runs one worker's mix until deadline: 70% point reads, 25%
// read-modify-write updates (a conflict counts as an update too), 5%
// scans of 100 keys, on keys drawn from the first keys.
func demoWorker(db *bwkv.DB, keys int, val []byte, seed uint64, deadline time.Time, n *demoCounts) error {
	rng := rand.New(rand.NewPCG(seed, 42))
	var kb, dst []byte
	for time.Now().Before(deadline) {
		kb = key(kb, uint64(rng.IntN(keys)))
		switch r := rng.IntN(100); {
		case r < 70:
			s, err := db.NewSnapshot()
			if err != nil {
				return err
			}
			dst, err = s.GetAppend(dst[:0], kb)
			s.Close()
			if err != nil {
				return err
			}
			n.reads.Add(1)
		case r < 95:
			err := db.Update(func(tx *bwkv.Txn) error {
				if _, err := tx.Get(kb); err != nil {
					return err
				}
				return tx.Put(kb, val)
			})
			if errors.Is(err, bwkv.ErrConflict) {
				n.conflicts.Add(1)
			} else if err != nil {
				return err
			}
			n.updates.Add(1)
		default:
			if err := demoScan(db, kb); err != nil {
				return err
			}
			n.scans.Add(1)
		}
	}
	return nil
}

// demoScan reads up to 100 keys from the first at or after from.
func demoScan(db *bwkv.DB, from []byte) error {
	return db.View(func(s *bwkv.Snapshot) error {
		it, err := s.NewIter(nil)
		if err != nil {
			return err
		}
		defer it.Close()
		n := 0
		for ok := it.SeekGE(from); ok && n < 100; ok = it.Next() {
			n++
		}
		return it.Error()
	})
}
