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

// BenchmarkLookup finds frames at random in a file of 200k small delta
// frames (a data file's table as a checkpoint of scattered updates leaves
// it): the search every frame read starts with.
func BenchmarkLookup(b *testing.B) {
	fs := vfs.NewMem()
	const n = 200000
	frames := make([]*delta.Frame, n)
	for i := range frames {
		a := uint64(2*i + 1)
		frames[i] = &delta.Frame{Addr: a, PID: 7, LSN: a, Delta: delta.New([]byte("k"), nil, 1, 1, 0)}
	}
	writeFile(b, fs, "/f", frames)
	r, err := openFile(b, fs, "/f")
	if err != nil {
		b.Fatal(err)
	}
	x := uint64(1)
	for b.Loop() {
		x = x*6364136223846793005 + 1442695040888963407
		if _, ok := r.Lookup(2*(x>>33%n) + 1); !ok {
			b.Fatal("a frame of the file not found")
		}
	}
}
