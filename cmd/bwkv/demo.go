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
	dir, keys, threads, secs, valSize := &o.dir, &o.keys, &o.threads, &o.secs, &o.valSize
	if *keys < 1 || *threads < 1 || *valSize < 0 {
		return errors.New("demo: --keys and --threads must be positive, --value-size not negative")
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "bwkv-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	db, err := bwkv.Open(*dir, &bwkv.Options{Durability: bwkv.DurabilityRelaxed})
	if err != nil {
		return err
	}
	defer db.Close()
	val := make([]byte, *valSize)
	start := time.Now()
	var kb []byte
	for i := 0; i < *keys; i += 1000 {
		err := db.Update(func(tx *bwkv.Txn) error {
			for j := i; j < i+1000 && j < *keys; j++ {
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
	fmt.Printf("loaded %d keys in %v\n", *keys, time.Since(start).Round(time.Millisecond))
	if err := db.Checkpoint(); err != nil {
		return err
	}
	var reads, updates, scans, conflicts atomic.Int64
	deadline := time.Now().Add(time.Duration(*secs * float64(time.Second)))
	var wg sync.WaitGroup
	errc := make(chan error, *threads)
	for t := 0; t < *threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(t), 42))
			var kb, dst []byte
			for time.Now().Before(deadline) {
				kb = key(kb, uint64(rng.IntN(*keys)))
				switch r := rng.IntN(100); {
				case r < 70:
					s, err := db.NewSnapshot()
					if err != nil {
						errc <- err
						return
					}
					dst, err = s.GetAppend(dst[:0], kb)
					s.Close()
					if err != nil {
						errc <- err
						return
					}
					reads.Add(1)
				case r < 95:
					err := db.Update(func(tx *bwkv.Txn) error {
						if _, err := tx.Get(kb); err != nil {
							return err
						}
						return tx.Put(kb, val)
					})
					if errors.Is(err, bwkv.ErrConflict) {
						conflicts.Add(1)
					} else if err != nil {
						errc <- err
						return
					}
					updates.Add(1)
				default:
					err := db.View(func(s *bwkv.Snapshot) error {
						it, err := s.NewIter(nil)
						if err != nil {
							return err
						}
						defer it.Close()
						n := 0
						for ok := it.SeekGE(kb); ok && n < 100; ok = it.Next() {
							n++
						}
						return it.Error()
					})
					if err != nil {
						errc <- err
						return
					}
					scans.Add(1)
				}
			}
		}(t)
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	total := reads.Load() + updates.Load() + scans.Load()
	fmt.Printf("mixed 70/25/5 read/update/scan, %d threads, %.1fs: %d ops, %.0f ops/s (%d reads, %d updates, %d conflicts, %d scans of 100)\n",
		*threads, *secs, total, float64(total)/(*secs), reads.Load(), updates.Load(), conflicts.Load(), scans.Load())
	if err := db.Check(context.Background()); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	fmt.Println("structural check: ok")
	fmt.Print(db.Stats())
	return nil
}
