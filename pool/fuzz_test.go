package pool_test

import (
	"errors"
	"testing"

	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/pool"
	"github.com/bwkv/bwkv/vfs"
)

// FuzzOpenFile feeds arbitrary file images to OpenFile twice: as they are
// (magic and checksums) and with the magic, table CRC and footer CRC
// recomputed, so the fuzzer reaches the footer and table validation. A file
// that opens must answer every read with its frame or a *CorruptionError.
func FuzzOpenFile(f *testing.F) {
	fs := vfs.NewMem()
	for _, n := range []int{0, 1, 3, 6} {
		writeFile(f, fs, "/seed", testFrames(1, n))
		f.Add(fileBytes(f, fs, "/seed"))
	}
	f.Add([]byte{})
	f.Add(make([]byte, footerSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(img []byte) {
			r, err := pool.OpenFile(bytesFile{img}, "fuzz")
			if err != nil {
				if !errors.Is(err, base.ErrCorruption) && !errors.Is(err, base.ErrVersion) {
					t.Fatalf("OpenFile error %v is neither corruption nor version", err)
				}
				return
			}
			info := r.Info()
			addrs := r.Addrs()
			if info.Frames != len(addrs) || info.Size != int64(len(img)) {
				t.Fatalf("info %+v with %d addresses in %d bytes", info, len(addrs), len(img))
			}
			var end int64
			for i, a := range addrs {
				ref, ok := r.Lookup(a)
				if !ok || ref.Offset != end || (i > 0 && a <= addrs[i-1]) {
					t.Fatalf("frame %d: ref %+v, %v, expected at %d", a, ref, ok, end)
				}
				end += int64(ref.Len)
				fr, err := r.ReadFrame(a)
				switch {
				case err == nil && fr.Addr != a:
					t.Fatalf("ReadFrame(%d) returned frame %d", a, fr.Addr)
				case err != nil && !errors.Is(err, base.ErrCorruption):
					t.Fatalf("ReadFrame(%d): %v", a, err)
				}
			}
			if end != info.FrameBytes {
				t.Fatalf("frames end at %d, info says %d", end, info.FrameBytes)
			}
		}
		check(data)
		check(recrc(data))
	})
}
