package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwkv/bwkv"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "demo":
		err = demo(os.Args[2:])
	case "check":
		err = withDB(os.Args[2:], func(db *bwkv.DB) error { return db.Check(context.Background()) })
	case "stats":
		err = withDB(os.Args[2:], func(db *bwkv.DB) error { fmt.Print(db.Stats()); return nil })
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bwkv:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: bwkv demo [-dir DIR] [-keys N] [-threads T] [-secs S] | bwkv check DIR | bwkv stats DIR")
	os.Exit(2)
}

func withDB(args []string, fn func(*bwkv.DB) error) error {
	if len(args) != 1 {
		usage()
	}
	db, err := bwkv.Open(args[0], &bwkv.Options{ErrorIfNotExist: true})
	if err != nil {
		return err
	}
	defer db.Close()
	return fn(db)
}

func key(buf []byte, id uint64) []byte {
	buf = append(buf[:0], "user"...)
	return binary.BigEndian.AppendUint64(buf, id*0x9e3779b97f4a7c15)
}

func demo(args []string) error {
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	dir := fs.String("dir", "", "database directory (default: a temporary one, removed afterwards)")
	keys := fs.Int("keys", 200_000, "keys to load")
	threads := fs.Int("threads", 2, "worker goroutines")
	secs := fs.Float64("secs", 5, "seconds to run the mixed workload")
	valSize := fs.Int("value-size", 128, "value size in bytes")
	_ = fs.Parse(args)
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
