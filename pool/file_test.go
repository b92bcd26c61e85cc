package pool_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/pool"
	"github.com/bwkv/bwkv/vfs"
)

func TestFileRoundTrip(t *testing.T) {
	big := &delta.Frame{Addr: 100000, PID: 1, LSN: 5,
		Delta: delta.New([]byte("big"), bytes.Repeat([]byte{7}, 700<<10), 1, 1, 0)} // past the flush size
	for _, fsName := range []string{"mem", "os"} {
		for _, n := range []int{0, 1, 2, 50, 3000} {
			t.Run(fmt.Sprintf("%s/%d", fsName, n), func(t *testing.T) {
				fs, dir := vfs.FS(vfs.NewMem()), "/db"
				if fsName == "os" {
					fs, dir = vfs.Default(), t.TempDir()
				}
				if err := fs.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				frames := testFrames(1, n)
				if n == 50 {
					frames = append(frames, big)
				}
				name := filepath.Join(dir, "000001.data")
				info := writeFile(t, fs, name, frames)
				r, err := openFile(t, fs, name)
				if err != nil {
					t.Fatalf("OpenFile: %v", err)
				}
				if r.Info() != info {
					t.Fatalf("Info %+v, Finish said %+v", r.Info(), info)
				}
				if info.Frames != len(frames) || info.Size != int64(len(fileBytes(t, fs, name))) {
					t.Fatalf("info %+v for %d frames", info, len(frames))
				}
				addrs := r.Addrs()
				if len(addrs) != len(frames) {
					t.Fatalf("%d addresses for %d frames", len(addrs), len(frames))
				}
				var total int64
				for i, want := range frames {
					if addrs[i] != want.Addr {
						t.Fatalf("Addrs()[%d] = %d, want %d", i, addrs[i], want.Addr)
					}
					ref, ok := r.Lookup(want.Addr)
					if !ok || ref.Offset != total || ref.Len != want.Size() {
						t.Fatalf("Lookup(%d) = %+v, %v", want.Addr, ref, ok)
					}
					total += int64(ref.Len)
					got, err := r.ReadFrame(want.Addr)
					if err != nil {
						t.Fatalf("ReadFrame(%d): %v", want.Addr, err)
					}
					if diff := sameFrame(want, got); diff != "" {
						t.Fatal(diff)
					}
				}
				if total != info.FrameBytes {
					t.Fatalf("frames take %d bytes, info says %d", total, info.FrameBytes)
				}
				if n > 0 && (info.MinAddr != frames[0].Addr || info.MaxAddr != frames[len(frames)-1].Addr) {
					t.Fatalf("info range [%d, %d]", info.MinAddr, info.MaxAddr)
				}
				for _, a := range []uint64{0, 2, 1 << 40} {
					if _, err := r.ReadFrame(a); !errors.Is(err, pool.ErrNoFrame) {
						t.Fatalf("ReadFrame(%d) = %v, want ErrNoFrame", a, err)
					}
				}
			})
		}
	}
}

// TestFileConcurrentReads reads every frame from many goroutines at once
// (run under -race).
func TestFileConcurrentReads(t *testing.T) {
	fs := vfs.NewMem()
	frames := testFrames(1, 400)
	writeFile(t, fs, "/f", frames)
	r, err := openFile(t, fs, "/f")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range frames {
				want := frames[(i*7+g*13)%len(frames)]
				got, err := r.ReadFrame(want.Addr)
				if err == nil && sameFrame(want, got) != "" {
					err = fmt.Errorf("frame %d differs", want.Addr)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestFileCorruptFrame damages one byte of one frame at a time: the reads
// of that frame fail with a *CorruptionError inside it, every other frame
// still reads.
func TestFileCorruptFrame(t *testing.T) {
	fs := vfs.NewMem()
	frames := testFrames(1, 12)
	writeFile(t, fs, "/f", frames)
	clean := fileBytes(t, fs, "/f")
	r, err := openFile(t, fs, "/f")
	if err != nil {
		t.Fatal(err)
	}
	bad := 5
	ref, _ := r.Lookup(frames[bad].Addr)
	for i := range ref.Len {
		off := ref.Offset + int64(i)
		img := bytes.Clone(clean)
		img[off] ^= 0x10
		mf := bytesFile{img}
		pf, err := pool.OpenFile(mf, "/f")
		if err != nil {
			t.Fatalf("byte %d: OpenFile: %v (frame bytes are checked on read)", off, err)
		}
		for j, want := range frames {
			got, err := pf.ReadFrame(want.Addr)
			if j != bad {
				if err != nil || sameFrame(want, got) != "" {
					t.Fatalf("byte %d: frame %d (undamaged): %v", off, j, err)
				}
				continue
			}
			var ce *base.CorruptionError
			if !errors.As(err, &ce) || !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("byte %d: damaged frame read gives %v, want a *CorruptionError", off, err)
			}
			if ce.File != "/f" || ce.Offset < ref.Offset || ce.Offset >= ref.Offset+int64(ref.Len) {
				t.Fatalf("byte %d: error %v does not point into the frame [%d, %d)", off, err, ref.Offset, ref.Offset+int64(ref.Len))
			}
		}
	}
}

// TestFileMisplacedFrame puts a valid frame where the table expects
// another: its own CRC passes, the table's does not, or the address does
// not match.
func TestFileMisplacedFrame(t *testing.T) {
	fs := vfs.NewMem()
	// Two deltas of equal encoded size.
	a := &delta.Frame{Addr: 10, PID: 1, Delta: delta.New([]byte("ka"), []byte("va"), 1, 1, 0)}
	b := &delta.Frame{Addr: 20, PID: 1, Delta: delta.New([]byte("kb"), []byte("vb"), 1, 1, 0)}
	writeFile(t, fs, "/f", []*delta.Frame{a, b})
	img := fileBytes(t, fs, "/f")
	n := a.Size()
	copy(img[n:], delta.AppendFrame(nil, a)) // frame a where b belongs
	r, err := pool.OpenFile(bytesFile{img}, "/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadFrame(20); !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), "table says") {
		t.Fatalf("misplaced frame: %v", err)
	}
	// Now make the table agree with the misplaced frame's CRC: the address
	// check catches it.
	tab := len(img) - footerSize - 2*entrySize
	copy(img[tab+entrySize+20:tab+entrySize+24], img[tab+20:tab+24])
	r, err = pool.OpenFile(bytesFile{recrc(img)}, "/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadFrame(20); !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), "holds frame 10") {
		t.Fatalf("misaddressed frame: %v", err)
	}
	if _, err := r.ReadFrame(10); err != nil {
		t.Fatalf("intact frame: %v", err)
	}
}

// TestOpenFileBad covers whole-file damage: each case gets its named error.
func TestOpenFileBad(t *testing.T) {
	fs := vfs.NewMem()
	frames := testFrames(1, 5)
	writeFile(t, fs, "/f", frames)
	clean := fileBytes(t, fs, "/f")
	ft := len(clean) - footerSize
	tab := ft - 5*entrySize
	put32 := func(b []byte, off int, v uint32) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b }
	put64 := func(b []byte, off int, v uint64) []byte { binary.LittleEndian.PutUint64(b[off:], v); return b }
	tests := []struct {
		name   string
		img    func(b []byte) []byte
		want   error  // ErrCorruption or ErrVersion
		reason string // substring of the error
	}{
		{"empty", func(b []byte) []byte { return nil }, base.ErrCorruption, "shorter than"},
		{"truncated below footer", func(b []byte) []byte { return b[:footerSize-1] }, base.ErrCorruption, "truncated"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }, base.ErrCorruption, "magic"},
		{"truncated to frames", func(b []byte) []byte { return b[:tab] }, base.ErrCorruption, "magic"},
		{"extended", func(b []byte) []byte { return append(b, 0) }, base.ErrCorruption, "magic"},
		{"bad magic", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, base.ErrCorruption, "magic"},
		{"footer bit flip", func(b []byte) []byte { b[ft+ftCount] ^= 1; return b }, base.ErrCorruption, "footer checksum"},
		{"version bit flip", func(b []byte) []byte { b[ft+ftVersion] ^= 2; return b }, base.ErrCorruption, "footer checksum"},
		{"table bit flip", func(b []byte) []byte { b[tab+3] ^= 1; return b }, base.ErrCorruption, "table checksum"},
		{"newer version", func(b []byte) []byte { return recrc(put32(b, ft+ftVersion, 3)) }, base.ErrVersion, "newer"},
		{"version 0", func(b []byte) []byte { return recrc(put32(b, ft+ftVersion, 0)) }, base.ErrCorruption, "version 0"},
		{"footer flags", func(b []byte) []byte { return recrc(put32(b, ft+ftFlags, 1)) }, base.ErrCorruption, "flags"},
		{"table offset", func(b []byte) []byte { return recrc(put64(b, ft+ftTableOff, uint64(tab-1))) }, base.ErrCorruption, "does not end"},
		{"table length", func(b []byte) []byte { return recrc(put64(b, ft+ftTableLen, 1<<62)) }, base.ErrCorruption, "does not end"},
		{"count", func(b []byte) []byte { return recrc(put64(b, ft+ftCount, 4)) }, base.ErrCorruption, "entry table"},
		{"min addr", func(b []byte) []byte { return recrc(put64(b, ft+ftMinAddr, 2)) }, base.ErrCorruption, "footer says"},
		{"max addr", func(b []byte) []byte { return recrc(put64(b, ft+ftMaxAddr, 1<<40)) }, base.ErrCorruption, "footer says"},
		{"inverted range", func(b []byte) []byte { return recrc(put64(b, ft+ftMinAddr, 1<<41)) }, base.ErrCorruption, "range"},
		{"entry addr 0", func(b []byte) []byte { return recrc(put64(b, tab, 0)) }, base.ErrCorruption, "address 0"},
		{"entry page 0", func(b []byte) []byte { return recrc(put64(b, tab+entrySize+24, 0)) }, base.ErrCorruption, "page 0"},
		{"entry addr order", func(b []byte) []byte { return recrc(put64(b, tab+entrySize, 1)) }, base.ErrCorruption, "ascend"},
		{"entry offset", func(b []byte) []byte { return recrc(put64(b, tab+entrySize+8, 1)) }, base.ErrCorruption, "previous one ends"},
		{"entry short", func(b []byte) []byte { return recrc(put32(b, tab+16, 10)) }, base.ErrCorruption, "shorter than a frame header"},
		{"entry overrun", func(b []byte) []byte { return recrc(put32(b, tab+4*entrySize+16, 1<<30)) }, base.ErrCorruption, "overruns"},
		{"gap before table", func(b []byte) []byte {
			return recrc(put32(b, tab+4*entrySize+16, uint32(frames[4].Size()-1)))
		}, base.ErrCorruption, "between the last frame"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			img := tc.img(bytes.Clone(clean))
			r, err := pool.OpenFile(bytesFile{img}, "/f")
			if err == nil {
				t.Fatalf("opened: %+v", r.Info())
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("err = %v, want %v mentioning %q", err, tc.want, tc.reason)
			}
			var ce *base.CorruptionError
			if tc.want == base.ErrCorruption && (!errors.As(err, &ce) || ce.File != "/f") {
				t.Fatalf("err = %#v, want a *CorruptionError naming the file", err)
			}
			if tc.want == base.ErrVersion && errors.Is(err, base.ErrCorruption) {
				t.Fatalf("newer version reported as corruption: %v", err)
			}
		})
	}
}

func TestFileWriterMisuse(t *testing.T) {
	fs := vfs.NewMem()
	f, err := fs.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pool.NewFileWriter(f)
	frames := testFrames(10, 3)
	if err := w.Add(frames[1]); err != nil {
		t.Fatal(err)
	}
	// Neither mistake spoils the writer.
	if err := w.Add(frames[0]); err == nil || !strings.Contains(err.Error(), "ascend") {
		t.Fatalf("descending address: %v", err)
	}
	if err := w.Add(frames[1]); err == nil {
		t.Fatal("repeated address accepted")
	}
	if err := w.Add(&delta.Frame{Addr: 100}); err == nil {
		t.Fatal("frame without a record accepted")
	}
	if err := w.Add(frames[2]); err != nil {
		t.Fatal(err)
	}
	if w.Frames() != 2 || w.FrameBytes() != int64(frames[1].Size()+frames[2].Size()) {
		t.Fatalf("Frames %d, FrameBytes %d", w.Frames(), w.FrameBytes())
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(testFrames(1000, 1)[0]); !errors.Is(err, pool.ErrFinished) {
		t.Fatalf("Add after Finish: %v", err)
	}
	if _, err := w.Finish(); !errors.Is(err, pool.ErrFinished) {
		t.Fatalf("second Finish: %v", err)
	}
	r, err := openFile(t, fs, "/f")
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Addrs(); len(got) != 2 || got[0] != frames[1].Addr || got[1] != frames[2].Addr {
		t.Fatalf("Addrs %v", got)
	}
}

func TestFileClose(t *testing.T) {
	fs := vfs.NewMem()
	writeFile(t, fs, "/f", testFrames(1, 2))
	f, err := fs.Open("/f")
	if err != nil {
		t.Fatal(err)
	}
	r, err := pool.OpenFile(f, "/f")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); !errors.Is(err, pool.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := r.ReadFrame(1); !errors.Is(err, pool.ErrClosed) {
		t.Fatalf("ReadFrame after Close: %v", err)
	}
	if _, err := f.ReadAt(make([]byte, 1), 0); err == nil {
		t.Fatal("Close left the vfs.File open")
	}
}

// TestFileTablePIDs: a version 2 table names each frame's page, PageFrames
// returns them without reading a frame, and a frame whose header names
// another page than its table entry is corruption of that frame alone.
func TestFileTablePIDs(t *testing.T) {
	fs := vfs.NewMem()
	frames := testFrames(1, 5)
	writeFile(t, fs, "/f", frames)
	img := fileBytes(t, fs, "/f")
	r, err := pool.OpenFile(bytesFile{img}, "/f")
	if err != nil {
		t.Fatal(err)
	}
	pf, ok := r.PageFrames()
	if !ok || len(pf) != len(frames) {
		t.Fatalf("PageFrames = %v, %v", pf, ok)
	}
	for i, f := range frames {
		if pf[i].Addr != f.Addr || pf[i].PID != f.PID || pf[i].Len != f.Size() {
			t.Fatalf("frame %d: %+v, want addr %d pid %d len %d", i, pf[i], f.Addr, f.PID, f.Size())
		}
	}
	tab := len(img) - footerSize - len(frames)*entrySize
	binary.LittleEndian.PutUint64(img[tab+2*entrySize+24:], frames[2].PID+1)
	r, err = pool.OpenFile(bytesFile{recrc(img)}, "/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadFrame(frames[2].Addr); !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), "the table says page") {
		t.Fatalf("ReadFrame with a wrong table page: %v", err)
	}
	if _, _, err := r.ReadRaw(nil, frames[2].Addr); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("ReadRaw with a wrong table page: %v", err)
	}
	if _, err := r.ReadFrame(frames[1].Addr); err != nil {
		t.Fatalf("intact frame: %v", err)
	}
}

// TestFileVersion1: a file written before table entries carried page IDs
// (24-byte entries, footer version 1) opens and reads as before;
// PageFrames reports that it cannot answer.
func TestFileVersion1(t *testing.T) {
	fs := vfs.NewMem()
	frames := testFrames(1, 5)
	writeFile(t, fs, "/f", frames)
	img := fileBytes(t, fs, "/f")
	ft := len(img) - footerSize
	tab := ft - len(frames)*entrySize
	v1 := bytes.Clone(img[:tab])
	for i := range frames {
		v1 = append(v1, img[tab+i*entrySize:tab+i*entrySize+24]...)
	}
	foot := bytes.Clone(img[ft:])
	binary.LittleEndian.PutUint64(foot[ftTableLen:], uint64(24*len(frames)))
	binary.LittleEndian.PutUint32(foot[ftVersion:], 1)
	v1 = recrc(append(v1, foot...))
	r, err := pool.OpenFile(bytesFile{v1}, "/f")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		got, err := r.ReadFrame(f.Addr)
		if err != nil || got.PID != f.PID {
			t.Fatalf("frame %d: %v %v", f.Addr, got, err)
		}
	}
	if pf, ok := r.PageFrames(); ok {
		t.Fatalf("PageFrames of a version 1 file = %v, true", pf)
	}
}

// TestFileWriterReserve: Reserve preallocates the frames' plain bytes,
// their table entries and the footer, and Finish cuts the file back to
// what it wrote, so the footer ends the file whatever the estimate (exact,
// over, under, or compressed frames that came out smaller).
func TestFileWriterReserve(t *testing.T) {
	frames := append(testFrames(1, 200), compressibleFrames()...)
	for i := 200; i < len(frames); i++ {
		frames[i].Addr = 1000 + uint64(i) // above testFrames' addresses, ascending
		frames[i].Link = frames[i-1].Addr
	}
	var plain int64
	for _, fr := range frames {
		plain += int64(fr.Size())
	}
	cases := []struct {
		name       string
		frameBytes int64
		codec      delta.Codec
	}{
		{"exact", plain, delta.CodecNone},
		{"over", plain + 100<<10, delta.CodecNone},
		{"under", plain / 2, delta.CodecNone},
		{"compressed", plain, delta.CodecS2},
	}
	for _, fsName := range []string{"mem", "os"} {
		for _, c := range cases {
			t.Run(fsName+"/"+c.name, func(t *testing.T) {
				fs, dir := vfs.FS(vfs.NewMem()), "/db"
				if fsName == "os" {
					fs, dir = vfs.Default(), t.TempDir()
				}
				if err := fs.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				name := filepath.Join(dir, "000001.data")
				f, err := fs.Create(name)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				w := pool.NewFileWriter(f)
				if c.codec != delta.CodecNone {
					cp, err := delta.NewCompressor(c.codec, 0)
					if err != nil {
						t.Fatal(err)
					}
					w.Compress(cp)
				}
				if err := w.Reserve(c.frameBytes, len(frames)); err != nil {
					t.Fatal(err)
				}
				reserved := c.frameBytes + int64(len(frames))*entrySize + footerSize
				if size, err := f.Size(); err != nil || size != reserved {
					t.Fatalf("after Reserve the file has %d bytes (%v), want %d", size, err, reserved)
				}
				for _, fr := range frames {
					if err := w.Add(fr); err != nil {
						t.Fatal(err)
					}
				}
				if err := w.Reserve(1, 1); err == nil {
					t.Fatal("Reserve after Add accepted")
				}
				info, err := w.Finish()
				if err != nil {
					t.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					t.Fatal(err)
				}
				if size, err := f.Size(); err != nil || size != info.Size {
					t.Fatalf("file has %d bytes (%v), Finish wrote %d", size, err, info.Size)
				}
				if c.codec != delta.CodecNone && info.FrameBytes >= plain {
					t.Fatalf("compressed frames take %d bytes, plain %d: the case tests nothing", info.FrameBytes, plain)
				}
				r, err := openFile(t, fs, name)
				if err != nil {
					t.Fatalf("OpenFile: %v", err)
				}
				for _, want := range frames {
					got, err := r.ReadFrame(want.Addr)
					if err != nil {
						t.Fatalf("ReadFrame(%d): %v", want.Addr, err)
					}
					if d := sameFrame(want, got); d != "" {
						t.Fatalf("frame %d: %s", want.Addr, d)
					}
				}
				if err := w.Reserve(1, 1); !errors.Is(err, pool.ErrFinished) {
					t.Fatalf("Reserve after Finish: %v", err)
				}
			})
		}
	}
}

// TestFileWriterReserveFails: a preallocation that fails (a full disk)
// is not an error, even one that grew the file part of the way: Finish
// still leaves the footer at the end of the file.
func TestFileWriterReserveFails(t *testing.T) {
	fs := vfs.NewMem()
	inner, err := fs.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	f := &halfAllocFile{File: inner}
	frames := testFrames(1, 100)
	w := pool.NewFileWriter(f)
	if err := w.Reserve(1<<20, len(frames)); err != nil {
		t.Fatalf("Reserve with a failing preallocation: %v", err)
	}
	if !f.called {
		t.Fatal("Reserve did not try to preallocate")
	}
	for _, fr := range frames {
		if err := w.Add(fr); err != nil {
			t.Fatal(err)
		}
	}
	info, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if size, err := inner.Size(); err != nil || size != info.Size {
		t.Fatalf("file has %d bytes (%v), Finish wrote %d", size, err, info.Size)
	}
	if _, err := openFile(t, fs, "/f"); err != nil {
		t.Fatalf("OpenFile: %v", err)
	}
}

// halfAllocFile grows the file to half the size asked, then fails with
// ENOSPC, as a preallocation on a nearly full disk may.
type halfAllocFile struct {
	vfs.File
	called bool
}

func (f *halfAllocFile) Allocate(size int64) error {
	f.called = true
	if err := f.Truncate(size / 2); err != nil {
		return err
	}
	return syscall.ENOSPC
}

// TestFileLargeTable: a table larger than the writer's buffer (20k
// frames: 640 KiB) goes out in pieces, its checksum summed across them;
// the file opens and every frame is found and read back, with and
// without a reservation.
func TestFileLargeTable(t *testing.T) {
	const n = 20000
	frames := make([]*delta.Frame, n)
	for i := range frames {
		a := uint64(3*i + 1)
		frames[i] = &delta.Frame{Addr: a, PID: 7 + a%5, LSN: a, Delta: delta.New(fmt.Appendf(nil, "k%06d", i), []byte("v"), a, 1, 0)}
	}
	for _, reserve := range []bool{false, true} {
		fs := vfs.NewMem()
		f, err := fs.Create("/f")
		if err != nil {
			t.Fatal(err)
		}
		w := pool.NewFileWriter(f)
		if reserve {
			var size int64
			for _, fr := range frames {
				size += int64(fr.Size())
			}
			if err := w.Reserve(size, n); err != nil {
				t.Fatal(err)
			}
		}
		for _, fr := range frames {
			if err := w.Add(fr); err != nil {
				t.Fatal(err)
			}
		}
		info, err := w.Finish()
		if err != nil || info.Frames != n {
			t.Fatalf("Finish = %+v, %v; want %d frames", info, err, n)
		}
		f.Close()
		r, err := openFile(t, fs, "/f")
		if err != nil {
			t.Fatalf("reserve %v: open: %v", reserve, err)
		}
		for i, fr := range frames {
			if _, ok := r.Lookup(fr.Addr); !ok {
				t.Fatalf("reserve %v: frame %d not found", reserve, fr.Addr)
			}
			if i%997 == 0 {
				got, err := r.ReadFrame(fr.Addr)
				if err != nil || got.PID != fr.PID || string(got.Delta.Key) != string(fr.Delta.Key) {
					t.Fatalf("reserve %v: ReadFrame(%d) = %+v, %v", reserve, fr.Addr, got, err)
				}
			}
		}
	}
}
