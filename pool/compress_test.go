package pool_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/pool"
	"github.com/bwkv/bwkv/vfs"
)

// compressibleFrames returns testFrames plus text pages and deltas that
// compress, so a file mixes plain and compressed frames.
func compressibleFrames() []*delta.Frame {
	frames := testFrames(1, 20)
	next := frames[len(frames)-1].Addr + 1
	for i := range 6 {
		f := &delta.Frame{Addr: next + uint64(i), PID: 40 + uint64(i), LSN: 9}
		if i%2 == 0 {
			var bd delta.Builder
			for k := range 50 {
				bd.Add(fmt.Appendf(nil, "user:%05d", k), fmt.Appendf(nil, `{"id":%d,"name":"user %d","ok":true}`, k, k), uint64(k+1), 1, 0)
			}
			f.Base = bd.Finish(nil, nil, 0, 0)
		} else {
			f.Delta = delta.New([]byte("doc"), bytes.Repeat([]byte(`{"field":"value"},`), 20), 3, 1, 0)
		}
		frames = append(frames, f)
	}
	return frames
}

// TestFileCompressed writes a file with each codec: every frame reads back
// equal, Stored agrees with the table (the bytes accounting charges), the
// compressible frames take fewer bytes than plain, and a flipped byte in a
// compressed frame fails that frame alone with a *CorruptionError.
func TestFileCompressed(t *testing.T) {
	frames := compressibleFrames()
	plain := vfs.NewMem()
	plainInfo := writeFile(t, plain, "/p", frames)
	for _, codec := range []delta.Codec{delta.CodecS2, delta.CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			fs := vfs.NewMem()
			cp, err := delta.NewCompressor(codec, 0)
			if err != nil {
				t.Fatal(err)
			}
			f, err := fs.Create("/f")
			if err != nil {
				t.Fatal(err)
			}
			w := pool.NewFileWriter(f).Compress(cp)
			for _, fr := range frames {
				if err := w.Add(fr); err != nil {
					t.Fatal(err)
				}
			}
			info, err := w.Finish()
			if err != nil {
				t.Fatal(err)
			}
			if info.FrameBytes >= plainInfo.FrameBytes {
				t.Fatalf("compressed frames take %d bytes, plain %d", info.FrameBytes, plainInfo.FrameBytes)
			}
			f.Close()
			r, err := openFile(t, fs, "/f")
			if err != nil {
				t.Fatal(err)
			}
			var total int
			compressed := 0
			for _, want := range frames {
				got, err := r.ReadFrame(want.Addr)
				if err != nil {
					t.Fatalf("frame %d: %v", want.Addr, err)
				}
				if d := sameFrame(want, got); d != "" {
					t.Fatal(d)
				}
				ref, _ := r.Lookup(want.Addr)
				stored, ok := w.Stored(want.Addr)
				if !ok || got.Stored != ref.Len || stored != ref.Len {
					t.Fatalf("frame %d: Stored %d, writer %d/%v, table %d", want.Addr, got.Stored, stored, ok, ref.Len)
				}
				if ref.Len < want.Size() {
					compressed++
				}
				total += ref.Len
			}
			if int64(total) != info.FrameBytes || compressed < 6 {
				t.Fatalf("frames sum to %d of %d bytes; %d compressed, want at least 6", total, info.FrameBytes, compressed)
			}
			clean := fileBytes(t, fs, "/f")
			bad := frames[len(frames)-2] // a compressed base
			ref, _ := r.Lookup(bad.Addr)
			for i := 0; i < ref.Len; i += 7 {
				img := bytes.Clone(clean)
				img[ref.Offset+int64(i)] ^= 0x40
				pf, err := pool.OpenFile(bytesFile{img}, "/f")
				if err != nil {
					t.Fatal(err)
				}
				for _, want := range frames {
					_, err := pf.ReadFrame(want.Addr)
					if want != bad {
						if err != nil {
							t.Fatalf("byte %d: undamaged frame %d: %v", i, want.Addr, err)
						}
						continue
					}
					var ce *base.CorruptionError
					if !errors.As(err, &ce) || !errors.Is(err, base.ErrCorruption) {
						t.Fatalf("byte %d: damaged frame gives %v", i, err)
					}
				}
			}
		})
	}
}
