//go:build ignore

// pread times random reads of a file that sits in the page cache, the
// cost floor of a larger-than-memory point read that goes to a data file.
//
//	go run pread.go [-dir D] [-mib 2048] [-readers 1] [-writer]
//
// It writes a file of -mib MiB of random bytes in -dir, then -readers
// goroutines each read -n random blocks of each size at 512-byte aligned
// offsets. With -writer, one more goroutine appends 4 MiB pwrites to a
// second file meanwhile (a checkpoint's writes). Both files are removed.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	dir := flag.String("dir", os.TempDir(), "directory for the files")
	mib := flag.Int64("mib", 2048, "file size in MiB")
	readers := flag.Int("readers", 1, "concurrent readers")
	n := flag.Int("n", 200000, "reads per reader and size")
	writer := flag.Bool("writer", false, "pwrite 4 MiB blocks to a second file while reading")
	flag.Parse()

	name := filepath.Join(*dir, "pread.data")
	f, err := os.Create(name)
	check(err)
	defer os.Remove(name)
	buf := make([]byte, 1<<20)
	for i := int64(0); i < *mib; i++ {
		for j := range buf {
			buf[j] = byte(rand.Uint32())
		}
		_, err := f.Write(buf)
		check(err)
	}
	check(f.Sync())

	var stop atomic.Bool
	var wg sync.WaitGroup
	if *writer {
		wname := filepath.Join(*dir, "pread.write")
		w, err := os.Create(wname)
		check(err)
		defer os.Remove(wname)
		wg.Add(1)
		go func() {
			defer wg.Done()
			block := make([]byte, 4<<20)
			var off int64
			for !stop.Load() {
				_, err := w.WriteAt(block, off)
				check(err)
				if off += int64(len(block)); off >= 1<<30 {
					off = 0
				}
			}
		}()
	}
	size := *mib << 20
	for _, sz := range []int{512, 1024, 4096, 8192, 16384} {
		var rwg sync.WaitGroup
		start := time.Now()
		for r := 0; r < *readers; r++ {
			rwg.Add(1)
			go func() {
				defer rwg.Done()
				b := make([]byte, sz)
				for i := 0; i < *n; i++ {
					_, err := f.ReadAt(b, rand.Int64N(size-int64(sz))&^511)
					check(err)
				}
			}()
		}
		rwg.Wait()
		per := float64(time.Since(start).Nanoseconds()) / 1e3 / float64(*n)
		fmt.Printf("readers=%d writer=%v size=%d: %.2f us per read (wall, per reader)\n", *readers, *writer, sz, per)
	}
	stop.Store(true)
	wg.Wait()
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
