package manifest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"

	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/vfs"
)

// history commits n generated edits to a new manifest in dir, with no
// rotation after the first, and returns the live file's record offsets and
// the state after each prefix (states[i] = after i commits).
func history(t *testing.T, fsys vfs.FS, dir string, n int) (offsets []int64, states []*State) {
	t.Helper()
	m, _, err := Open(fsys, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	m.SetRotateBytes(1 << 30)
	g := newGen(7)
	states = append(states, NewState())
	for range n {
		if err := m.Commit(g.next(t)); err != nil {
			t.Fatal(err)
		}
		states = append(states, g.shadow.Clone())
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := readFile(fsys, liveFile(t, fsys, dir))
	for off := 0; off < len(data); {
		_, size, ok := frameAt(data, off)
		if !ok {
			t.Fatalf("bad frame at %d", off)
		}
		offsets = append(offsets, int64(off))
		off += size
	}
	// Record 0 is the snapshot, record 1 the first commit, record i commit i.
	if len(offsets) != n+1 {
		t.Fatalf("%d records for %d commits", len(offsets), n)
	}
	offsets = append(offsets, int64(len(data)))
	return offsets, states
}

func TestTornTail(t *testing.T) {
	fsys := vfs.Default()
	const n = 6
	type tc struct {
		name   string
		mangle func(data []byte, lastOff int64) []byte
	}
	cases := []tc{
		{"zero tail", func(d []byte, _ int64) []byte { return append(d, make([]byte, 100)...) }},
		{"header only", func(d []byte, lo int64) []byte { return d[:lo+headerSize] }},
		{"short header", func(d []byte, lo int64) []byte { return d[:lo+3] }},
		{"crc flip", func(d []byte, lo int64) []byte { d[lo+5] ^= 1; return d }},
		{"payload flip", func(d []byte, lo int64) []byte { d[len(d)-1] ^= 0x80; return d }},
		{"zeroed payload", func(d []byte, lo int64) []byte { clear(d[lo+headerSize+1:]); return d }},
		{"length past end", func(d []byte, lo int64) []byte {
			binary.LittleEndian.PutUint32(d[lo:], 1<<20)
			return d
		}},
	}
	for cut := int64(1); cut < 12; cut++ {
		cases = append(cases, tc{"cut", func(d []byte, _ int64) []byte { return d[:int64(len(d))-cut] }})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			offs, states := history(t, fsys, dir, n)
			live := liveFile(t, fsys, dir)
			data, _ := readFile(fsys, live)
			want := states[n-1]
			if c.name == "zero tail" {
				want = states[n]
			}
			writeFile(t, fsys, live, c.mangle(data, offs[n]))
			m, got, err := Open(fsys, dir, false)
			if err != nil {
				t.Fatalf("Open with a torn tail: %v", err)
			}
			sameState(t, "torn tail", got, want)
			// The next commit overwrites the tail; it survives a reopen.
			g := &gen{rng: newGen(99).rng, shadow: want.Clone()}
			e := g.next(t)
			if err := m.Commit(e); err != nil {
				t.Fatal(err)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			_, got, err = Open(fsys, dir, false)
			if err != nil {
				t.Fatalf("reopen after overwriting the tail: %v", err)
			}
			sameState(t, "after commit over torn tail", got, g.shadow)
		})
	}
}

func TestMidLogCorruption(t *testing.T) {
	fsys := vfs.Default()
	const n = 6
	cases := []struct {
		name   string
		mangle func(d []byte, off int64)
	}{
		{"payload flip", func(d []byte, off int64) { d[off+headerSize+2] ^= 4 }},
		{"crc flip", func(d []byte, off int64) { d[off+4] ^= 1 }},
		{"length grows past end", func(d []byte, off int64) { binary.LittleEndian.PutUint32(d[off:], 1<<20) }},
		{"length shrinks", func(d []byte, off int64) { binary.LittleEndian.PutUint32(d[off:], 2) }},
		{"zeroed header", func(d []byte, off int64) { clear(d[off : off+headerSize]) }},
	}
	for _, c := range cases {
		for _, rec := range []int{0, 1, n / 2, n - 1} {
			t.Run(c.name, func(t *testing.T) {
				dir := t.TempDir()
				offs, _ := history(t, fsys, dir, n)
				live := liveFile(t, fsys, dir)
				data, _ := readFile(fsys, live)
				c.mangle(data, offs[rec])
				writeFile(t, fsys, live, data)
				before := dirImage(t, fsys, dir)
				_, _, err := Open(fsys, dir, false)
				var ce *base.CorruptionError
				if !errors.As(err, &ce) {
					t.Fatalf("record %d: Open: %v, want *base.CorruptionError", rec, err)
				}
				if ce.File != live || ce.Offset != offs[rec] {
					t.Fatalf("record %d: error at %s:%d, want %s:%d (%v)", rec, ce.File, ce.Offset, live, offs[rec], ce)
				}
				if dirImage(t, fsys, dir) != before {
					t.Fatal("a failed Open changed the directory")
				}
			})
		}
	}
}

// TestValidFrameBadContent: a record with a good CRC whose payload does
// not decode or apply is corruption even at the tail: it was written so.
func TestValidFrameBadContent(t *testing.T) {
	fsys := vfs.Default()
	for _, payload := range [][]byte{
		{1, 99}, // unknown tag
		(&Edit{Has: HasNextPID, NextPID: 0}).Encode(nil)[:1],       // version byte only: valid, empty edit
		(&Edit{RemovePages: []uint64{1 << 40}}).Encode(nil),        // removes a missing page
		(&Edit{Has: HasNextManifest, NextManifest: 1}).Encode(nil), // counter back
	} {
		dir := t.TempDir()
		offs, _ := history(t, fsys, dir, 3)
		live := liveFile(t, fsys, dir)
		data, _ := readFile(fsys, live)
		writeFile(t, fsys, live, appendFrame(data, payload))
		_, _, err := Open(fsys, dir, false)
		var ce *base.CorruptionError
		if len(payload) == 1 {
			if err != nil {
				t.Fatalf("empty edit: %v", err)
			}
			continue
		}
		if !errors.As(err, &ce) || ce.File != live || ce.Offset < offs[4] {
			t.Fatalf("payload %x: %v, want corruption at or after %d", payload, err, offs[4])
		}
	}
}

func TestCurrentProblems(t *testing.T) {
	fsys := vfs.Default()
	cases := []struct {
		name    string
		current string
	}{
		{"missing file", "MANIFEST-000009\n"},
		{"no newline", "MANIFEST-000001"},
		{"garbage", "hello\n"},
		{"empty", ""},
		{"zero", "MANIFEST-000000\n"},
		{"short number", "MANIFEST-1\n"},
		{"trailing junk", "MANIFEST-000001\nx"},
		{"too long", string(bytes.Repeat([]byte("x"), 100))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			history(t, fsys, dir, 2)
			writeFile(t, fsys, filepath.Join(dir, currentName), []byte(c.current))
			_, _, err := Open(fsys, dir, true)
			var ce *base.CorruptionError
			if !errors.As(err, &ce) {
				t.Fatalf("Open: %v, want *base.CorruptionError", err)
			}
		})
	}
}

func TestCurrentLost(t *testing.T) {
	fsys := vfs.Default()
	dir := t.TempDir()
	history(t, fsys, dir, 3)
	if err := fsys.Remove(filepath.Join(dir, currentName)); err != nil {
		t.Fatal(err)
	}
	for _, create := range []bool{false, true} {
		_, _, err := Open(fsys, dir, create)
		var ce *base.CorruptionError
		if !errors.As(err, &ce) {
			t.Fatalf("create=%v: Open without CURRENT but with a used manifest: %v", create, err)
		}
	}
	// A later manifest number without CURRENT is corruption too.
	dir = t.TempDir()
	writeFile(t, fsys, filepath.Join(dir, "MANIFEST-000002"), nil)
	if _, _, err := Open(fsys, dir, true); err == nil {
		t.Fatal("MANIFEST-000002 without CURRENT accepted")
	}
}

// TestFirstCommitInterrupted: a crash inside the creating rotation leaves
// MANIFEST-000001 (complete or not) and no CURRENT; that commit never
// returned, so Open starts afresh and the next commit replaces the file.
func TestFirstCommitInterrupted(t *testing.T) {
	fsys := vfs.Default()
	g := newGen(8)
	e := g.next(t)
	snap := NewState().Snapshot()
	snap.NextManifest = 2
	full := appendFrame(appendFrame(nil, snap.Encode(nil)), e.Encode(nil))
	for _, size := range []int{0, 5, len(full) / 2, len(full)} {
		dir := t.TempDir()
		writeFile(t, fsys, filepath.Join(dir, "MANIFEST-000001"), full[:size])
		m, st, err := Open(fsys, dir, true)
		if err != nil {
			t.Fatalf("size %d: Open: %v", size, err)
		}
		sameState(t, "fresh", st, NewState())
		if err := m.Commit(e); err != nil {
			t.Fatal(err)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		_, st, err = Open(fsys, dir, false)
		if err != nil {
			t.Fatal(err)
		}
		sameState(t, "after first commit", st, g.shadow)
	}
}

func TestNewerVersion(t *testing.T) {
	fsys := vfs.Default()
	for _, payload := range [][]byte{
		{editEncoding + 1, 1, 2, 3},
		(&Edit{Has: HasFormatVersion, FormatVersion: FormatVersion + 1}).Encode(nil),
	} {
		dir := t.TempDir()
		history(t, fsys, dir, 2)
		live := liveFile(t, fsys, dir)
		data, _ := readFile(fsys, live)
		writeFile(t, fsys, live, appendFrame(data, payload))
		_, _, err := Open(fsys, dir, false)
		if !errors.Is(err, base.ErrVersion) {
			t.Fatalf("payload %x: Open: %v, want base.ErrVersion", payload, err)
		}
	}
}

// TestEmptyLiveFile: CURRENT naming an empty (or snapshot-less) file is
// corruption, not an empty state.
func TestEmptyLiveFile(t *testing.T) {
	fsys := vfs.Default()
	dir := t.TempDir()
	history(t, fsys, dir, 2)
	writeFile(t, fsys, liveFile(t, fsys, dir), nil)
	var ce *base.CorruptionError
	if _, _, err := Open(fsys, dir, true); !errors.As(err, &ce) {
		t.Fatalf("Open: %v, want *base.CorruptionError", err)
	}
}
