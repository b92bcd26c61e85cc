package pool_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/pool"
	"github.com/bwkv/bwkv/vfs"
)

// Layout of the footer and table, written here from the format description
// in doc.go rather than taken from the package, so the tests check the
// documented format.
const (
	footerSize = 64
	entrySize  = 32 // version 2: addr, offset, length, crc, pid
	ftTableOff = 0
	ftTableLen = 8
	ftCount    = 16
	ftMinAddr  = 24
	ftMaxAddr  = 32
	ftTableCRC = 40
	ftFlags    = 44
	ftVersion  = 48
	ftCRC      = 52
	ftMagic    = 56
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// testFrames returns n frames with ascending addresses from first, mixing
// deltas (of every flag), leaf bases and inner bases, the i-th linked to the
// (i-1)-th.
func testFrames(first uint64, n int) []*delta.Frame {
	out := make([]*delta.Frame, n)
	for i := range n {
		addr := first + uint64(3*i)
		f := &delta.Frame{Addr: addr, PID: uint64(i%5 + 1), LSN: 100 * addr}
		if i > 0 {
			f.Link = out[i-1].Addr
		}
		switch i % 4 {
		case 0, 1:
			flags := []delta.Flags{0, delta.Tombstone, delta.CLR, delta.CLR | delta.Tombstone}[i/4%4]
			f.Delta = delta.New(fmt.Appendf(nil, "key%d", i), fmt.Appendf(nil, "value%d", i), uint64(i), uint32(i), flags)
		case 2:
			var bd delta.Builder
			for k := range i % 7 {
				bd.Add(fmt.Appendf(nil, "k%03d", k), fmt.Appendf(nil, "v%d", k), uint64(k), 1, 0)
			}
			f.Base = bd.Finish([]byte("k"), []byte("l"), 3, 0)
		case 3:
			var bd delta.Builder
			bd.AddChild(nil, 11)
			bd.AddChild([]byte("m"), 12)
			f.Base = bd.Finish(nil, nil, 0, 1)
		}
		out[i] = f
	}
	return out
}

// writeFile writes frames to a new file name in fs and returns its info.
func writeFile(t testing.TB, fs vfs.FS, name string, frames []*delta.Frame) pool.FileInfo {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pool.NewFileWriter(f)
	for _, fr := range frames {
		if err := w.Add(fr); err != nil {
			t.Fatalf("Add(%d): %v", fr.Addr, err)
		}
	}
	info, err := w.Finish()
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return info
}

// openFile opens name in fs with pool.OpenFile; the File is closed at the
// end of the test.
func openFile(t testing.TB, fs vfs.FS, name string) (*pool.File, error) {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := pool.OpenFile(f, name)
	if err != nil {
		f.Close()
		return nil, err
	}
	t.Cleanup(func() { pf.Close() })
	return pf, nil
}

// fileBytes returns name's contents in fs.
func fileBytes(t testing.TB, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return b
}

// recrc fixes the table and footer checksums and the magic of a file image
// whose footer or table a test (or the fuzzer) changed. An image shorter
// than a footer is returned unchanged; a table that does not lie inside the
// image keeps its CRC.
func recrc(b []byte) []byte {
	b = bytes.Clone(b)
	if len(b) < footerSize {
		return b
	}
	ft := b[len(b)-footerSize:]
	copy(ft[ftMagic:], "bwkvdata")
	off := binary.LittleEndian.Uint64(ft[ftTableOff:])
	n := binary.LittleEndian.Uint64(ft[ftTableLen:])
	if body := uint64(len(b) - footerSize); off <= body && n <= body-off {
		binary.LittleEndian.PutUint32(ft[ftTableCRC:], crc32.Checksum(b[off:off+n], castagnoli))
	}
	c := crc32.Update(crc32.Update(0, castagnoli, ft[:ftCRC]), castagnoli, ft[ftCRC+4:])
	binary.LittleEndian.PutUint32(ft[ftCRC:], c)
	return b
}

// bytesFile is a read-only vfs.File over a byte slice, for the fuzzer.
type bytesFile struct{ b []byte }

var _ vfs.File = bytesFile{}

func (f bytesFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, syscall.EINVAL
	}
	if off >= int64(len(f.b)) {
		return 0, io.EOF
	}
	n := copy(p, f.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
func (bytesFile) WriteAt([]byte, int64) (int, error) { return 0, os.ErrPermission }
func (bytesFile) Write([]byte) (int, error)          { return 0, os.ErrPermission }
func (bytesFile) Close() error                       { return nil }
func (bytesFile) Sync() error                        { return nil }
func (bytesFile) Truncate(int64) error               { return os.ErrPermission }
func (f bytesFile) Size() (int64, error)             { return int64(len(f.b)), nil }

// sameFrame reports how got differs from want ("" if equal).
func sameFrame(want, got *delta.Frame) string {
	a, b := delta.AppendFrame(nil, want), delta.AppendFrame(nil, got)
	if !bytes.Equal(a, b) {
		return fmt.Sprintf("frame %d: read back differs from what was written", want.Addr)
	}
	return ""
}
