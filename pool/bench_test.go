package pool_test

import (
	"fmt"
	"testing"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/pool"
	"github.com/bwkv/bwkv/vfs"
)

func benchBase(addr uint64) *delta.Frame {
	var bd delta.Builder
	for i := range 128 {
		bd.Add(fmt.Appendf(nil, "user:%010d", i), make([]byte, 100), uint64(i), 1, 0)
	}
	return &delta.Frame{Addr: addr, PID: addr, LSN: addr, Base: bd.Finish(nil, nil, 0, 0)}
}

// discardFile is a vfs.File that drops writes, so the benchmark measures
// the writer rather than the file system.
type discardFile struct{ bytesFile }

func (discardFile) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }

// BenchmarkFileWrite128 encodes a 1000-frame file of 128-entry bases
// (writes discarded).
func BenchmarkFileWrite128(b *testing.B) {
	frames := make([]*delta.Frame, 1000)
	for i := range frames {
		frames[i] = benchBase(uint64(i + 1))
	}
	b.SetBytes(int64(len(frames) * frames[0].Size()))
	b.ReportAllocs()
	for b.Loop() {
		w := pool.NewFileWriter(discardFile{})
		for _, fr := range frames {
			if err := w.Add(fr); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.Finish(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadFrame128 reads 128-entry bases from an open file on a MemFS.
func BenchmarkReadFrame128(b *testing.B) {
	fs := vfs.NewMem()
	frames := []*delta.Frame{benchBase(1), benchBase(2), benchBase(3)}
	writeFile(b, fs, "/f", frames)
	r, err := openFile(b, fs, "/f")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(frames[0].Size()))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := r.ReadFrame(uint64(i%3 + 1)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkLookup finds frames at random in 40 files of 30k small delta
// frames each (the tables of a 2M-key store's checkpoints, 38 MiB in all:
// more than the processor's cache holds): the search every frame read
// starts with. The addresses are evenly spread (every other one), kept at
// random (as a checkpoint keeps the frames not superseded before it), or
// in two dense runs far apart.
func BenchmarkLookup(b *testing.B) {
	const files, n = 40, 30000
	spreads := []struct {
		name string
		next func(i int, prev, x uint64) uint64
	}{
		{"even", func(_ int, prev, _ uint64) uint64 { return prev + 2 }},
		{"gaps", func(_ int, prev, x uint64) uint64 { return prev + 1 + x%4 }},
		{"runs", func(i int, prev, _ uint64) uint64 {
			if i == n/2 {
				return prev + 1<<40
			}
			return prev + 1
		}},
	}
	for _, s := range spreads {
		b.Run(s.name, func(b *testing.B) {
			fs := vfs.NewMem()
			rs := make([]*pool.File, files)
			addrs := make([][]uint64, files)
			prev, x := uint64(0), uint64(1)
			for f := range rs {
				frames := make([]*delta.Frame, n)
				addrs[f] = make([]uint64, n)
				for i := range frames {
					x = x*6364136223846793005 + 1442695040888963407
					a := s.next(i, prev, x>>33)
					addrs[f][i], prev = a, a
					frames[i] = &delta.Frame{Addr: a, PID: 7, LSN: a, Delta: delta.New([]byte("k"), nil, 1, 1, 0)}
				}
				name := fmt.Sprintf("/f%d", f)
				writeFile(b, fs, name, frames)
				r, err := openFile(b, fs, name)
				if err != nil {
					b.Fatal(err)
				}
				rs[f] = r
			}
			for b.Loop() {
				x = x*6364136223846793005 + 1442695040888963407
				f := x >> 33 % files
				if _, ok := rs[f].Lookup(addrs[f][x>>13%n]); !ok {
					b.Fatal("a frame of the file not found")
				}
			}
		})
	}
}
