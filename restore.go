package bwkv

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/vfs"
)

// backupStreamName names the stream in the CorruptionErrors of a damaged
// backup (the stream is not a file of the database).
const backupStreamName = "backup stream"

// BackupReader decodes a backup stream (see Snapshot.WriteTo) and verifies
// it as it goes: every frame's CRC and number, key order, entry sizes, and
// at the end the trailer's key count, byte count and content hash. Damage
// is a *CorruptionError naming the frame (chunk) and its offset in the
// stream. A BackupReader is for one goroutine.
type BackupReader struct {
	r      *bufio.Reader
	off    int64 // stream offset of the next unread byte
	header BackupHeader

	index    uint64 // number of the next frame
	chunkOff int64  // stream offset of the current frame
	chunk    []byte // current data payload (reused)
	pos      int
	maxFrame int

	hash        hash.Hash
	keys, bytes uint64
	last        []byte // previous key (a copy)
	hasLast     bool
	done        bool
	err         error
}

// ReadBackupHeader reads and verifies a backup stream's header.
func ReadBackupHeader(r io.Reader) (*BackupHeader, error) {
	br, err := NewBackupReader(r)
	if err != nil {
		return nil, err
	}
	h := br.Header()
	return &h, nil
}

// NewBackupReader reads and verifies the stream's header and returns a
// reader positioned at its first entry.
func NewBackupReader(r io.Reader) (*BackupReader, error) {
	br := &BackupReader{r: bufio.NewReaderSize(r, 64<<10), hash: sha256.New()}
	var pre [len(backupMagic) + 4]byte
	if _, err := io.ReadFull(br.r, pre[:]); err != nil {
		return nil, br.corrupt(0, "stream shorter than its magic and version: %v", err)
	}
	br.off = int64(len(pre))
	if string(pre[:len(backupMagic)]) != backupMagic {
		return nil, br.corrupt(0, "not a bwkv backup (bad magic %q)", pre[:len(backupMagic)])
	}
	v := binary.LittleEndian.Uint32(pre[len(backupMagic):])
	if v != backupVersion {
		return nil, fmt.Errorf("bwkv: backup stream version %d (this build reads %d): %w", v, backupVersion, ErrVersion)
	}
	br.header.Version = v
	// The header frame's size is bounded before its fields are known.
	br.maxFrame = maxBackupMetadata + 256
	kind, p, err := br.frame()
	if err != nil {
		return nil, err
	}
	if kind != frameHeader {
		return nil, br.corrupt(br.chunkOff, "chunk 0: kind %q, want the header", kind)
	}
	d := fieldReader{b: p}
	h := &br.header
	h.SnapshotTS = d.uvarint()
	h.PageSplitEntries = d.int()
	h.BlobThreshold = d.int()
	h.MaxKeySize = d.int()
	h.MaxValueSize = d.int()
	h.Compression = string(d.bytes())
	h.Metadata = bytes.Clone(d.bytes())
	if d.bad || len(d.b) != 0 {
		return nil, br.corrupt(br.chunkOff, "chunk 0: malformed header")
	}
	if h.MaxKeySize < 1 || h.MaxKeySize > 1<<16 || h.MaxValueSize < 1 || h.MaxValueSize > 1<<30 {
		return nil, br.corrupt(br.chunkOff, "chunk 0: key or value size limit out of range (%d, %d)", h.MaxKeySize, h.MaxValueSize)
	}
	br.maxFrame = backupChunkBytes + 2*binary.MaxVarintLen64 + h.MaxKeySize + h.MaxValueSize
	return br, nil
}

// Header returns the stream's header. The caller must not modify its
// Metadata.
func (br *BackupReader) Header() BackupHeader { return br.header }

// Next returns the next key and value, or io.EOF after the trailer
// verified. The slices are valid until the next call and must not be
// modified.
func (br *BackupReader) Next() (key, value []byte, err error) {
	if br.err != nil {
		return nil, nil, br.err
	}
	for br.pos == len(br.chunk) {
		if br.done {
			return nil, nil, io.EOF
		}
		if err := br.nextChunk(); err != nil {
			br.err = err
			return nil, nil, err
		}
	}
	d := fieldReader{b: br.chunk[br.pos:]}
	key, value = d.bytes(), d.bytes()
	n := br.index - 1
	switch {
	case d.bad:
		br.err = br.corrupt(br.chunkOff, "chunk %d: entry at payload offset %d runs past the chunk", n, br.pos)
	case len(key) == 0 || len(key) > br.header.MaxKeySize:
		br.err = br.corrupt(br.chunkOff, "chunk %d: key of %d bytes (limit %d)", n, len(key), br.header.MaxKeySize)
	case len(value) > br.header.MaxValueSize:
		br.err = br.corrupt(br.chunkOff, "chunk %d: value of %d bytes (limit %d)", n, len(value), br.header.MaxValueSize)
	case br.hasLast && bytes.Compare(key, br.last) <= 0:
		br.err = br.corrupt(br.chunkOff, "chunk %d: key %q not above the previous key %q", n, key, br.last)
	}
	if br.err != nil {
		return nil, nil, br.err
	}
	br.pos = len(br.chunk) - len(d.b)
	br.last, br.hasLast = append(br.last[:0], key...), true
	br.keys++
	br.bytes += uint64(len(key) + len(value))
	return key, value, nil
}

// nextChunk reads the next frame: a data frame becomes the current chunk;
// the trailer is verified and must end the stream.
func (br *BackupReader) nextChunk() error {
	kind, p, err := br.frame()
	if err != nil {
		return err
	}
	n := br.index - 1
	switch kind {
	case frameData:
		if len(p) == 0 {
			return br.corrupt(br.chunkOff, "chunk %d: empty data chunk", n)
		}
		br.hash.Write(p)
		br.chunk, br.pos = p, 0
		return nil
	case frameTrailer:
	default:
		return br.corrupt(br.chunkOff, "chunk %d: unknown kind %q", n, kind)
	}
	if len(p) != trailerBytes {
		return br.corrupt(br.chunkOff, "chunk %d: trailer of %d bytes, want %d", n, len(p), trailerBytes)
	}
	keys, byts := binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])
	if keys != br.keys || byts != br.bytes {
		return br.corrupt(br.chunkOff, "chunk %d: trailer counts %d keys and %d bytes, the stream held %d and %d", n, keys, byts, br.keys, br.bytes)
	}
	if !bytes.Equal(p[16:], br.hash.Sum(nil)) {
		return br.corrupt(br.chunkOff, "chunk %d: content hash mismatch", n)
	}
	if _, err := br.r.ReadByte(); err != io.EOF {
		if err != nil {
			return fmt.Errorf("bwkv: read backup stream after its trailer: %w", err)
		}
		return br.corrupt(br.off, "data after the trailer (chunk %d)", n)
	}
	br.done = true
	br.chunk, br.pos = br.chunk[:0], 0
	return nil
}

// frame reads and checks one frame. The payload is read in steps, so a
// damaged length costs at most what the stream really holds.
func (br *BackupReader) frame() (byte, []byte, error) {
	br.chunkOff = br.off
	n := br.index
	var h [1 + 8 + 4]byte
	if err := br.read(h[:], n, "chunk header"); err != nil {
		return 0, nil, err
	}
	if idx := binary.LittleEndian.Uint64(h[1:]); idx != n {
		return 0, nil, br.corrupt(br.chunkOff, "chunk %d: numbered %d (a chunk is missing, repeated or out of order)", n, idx)
	}
	size := int(binary.LittleEndian.Uint32(h[9:]))
	if size > br.maxFrame {
		return 0, nil, br.corrupt(br.chunkOff, "chunk %d: length %d above the limit %d", n, size, br.maxFrame)
	}
	p := br.chunk[:0]
	for len(p) < size {
		step := min(size-len(p), 1<<20)
		p = append(p, make([]byte, step)...)
		if err := br.read(p[len(p)-step:], n, "chunk payload"); err != nil {
			return 0, nil, err
		}
	}
	var c [4]byte
	if err := br.read(c[:], n, "chunk checksum"); err != nil {
		return 0, nil, err
	}
	crc := crc32.Update(crc32.Checksum(h[:], castagnoli), castagnoli, p)
	if crc != binary.LittleEndian.Uint32(c[:]) {
		return 0, nil, br.corrupt(br.chunkOff, "chunk %d: checksum mismatch", n)
	}
	br.index++
	return h[0], p, nil
}

func (br *BackupReader) read(b []byte, n uint64, what string) error {
	k, err := io.ReadFull(br.r, b)
	br.off += int64(k)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return br.corrupt(br.chunkOff, "chunk %d: stream truncated in the %s (no trailer)", n, what)
	default:
		return fmt.Errorf("bwkv: read backup stream at %d: %w", br.off, err)
	}
}

func (br *BackupReader) corrupt(off int64, format string, a ...any) error {
	return base.CorruptionErrorf(backupStreamName, off, format, a...)
}

// fieldReader decodes uvarints and length-prefixed bytes; bad is set on
// the first malformed field and sticks.
type fieldReader struct {
	b   []byte
	bad bool
}

func (d *fieldReader) uvarint() uint64 {
	if d.bad {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *fieldReader) int() int {
	v := d.uvarint()
	if v > 1<<31 {
		d.bad = true
		return 0
	}
	return int(v)
}

func (d *fieldReader) bytes() []byte {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)) {
		d.bad = true
		return nil
	}
	b := d.b[:n:n]
	d.b = d.b[n:]
	return b
}

// Restore builds a new database in dir from a backup stream (see
// Snapshot.WriteTo). It refuses a dir that exists and is not empty (in
// particular one holding a database). It builds the database in a
// temporary directory beside dir (".<name>.restore-<random>"), checkpoints
// and syncs it, and renames it into place: a failed or interrupted restore
// leaves dir absent (or as empty as it was); a crash may leave the
// temporary directory, which holds nothing of value and may be removed.
// The stream is verified as it is read; damage is a *CorruptionError
// naming the chunk, and nothing is left behind.
//
// The data goes through a bulk path: keys arrive in order and are
// installed in the page tree directly, without a log record or a
// transaction per key; checkpoints write the pages. Format options that
// opts leaves zero (PageSplitEntries, BlobThreshold, MaxKeySize,
// MaxValueSize) take the stream's values; opts.FS is used, opts.ReadOnly
// must be false.
func Restore(dir string, r io.Reader, opts *Options) error {
	o := opts.Clone()
	if o.ReadOnly {
		return fmt.Errorf("bwkv: restore %s: Options.ReadOnly is set", dir)
	}
	if o.FS == nil {
		o.FS = vfs.Default()
	}
	fsys := o.FS
	emptyTarget, err := checkRestoreTarget(fsys, dir)
	if err != nil {
		return err
	}
	br, err := NewBackupReader(r)
	if err != nil {
		return fmt.Errorf("bwkv: restore %s: %w", dir, err)
	}
	h := br.Header()
	if o.PageSplitEntries == 0 {
		o.PageSplitEntries = h.PageSplitEntries
	}
	if o.BlobThreshold == 0 {
		o.BlobThreshold = h.BlobThreshold
		if o.BlobThreshold == 0 {
			o.BlobThreshold = -1 // the stream's 0 is "off"
		}
	}
	if o.MaxKeySize == 0 {
		o.MaxKeySize = h.MaxKeySize
	}
	if o.MaxValueSize == 0 {
		o.MaxValueSize = h.MaxValueSize
	}
	o.ErrorIfNotExist = false
	clean := filepath.Clean(dir)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(clean), "."+filepath.Base(clean)+".restore-"+hex.EncodeToString(rnd[:]))
	if err := restoreInto(tmp, br, o); err != nil {
		_ = removeAll(fsys, tmp)
		return fmt.Errorf("bwkv: restore %s: %w", dir, err)
	}
	if emptyTarget {
		if err := fsys.Remove(clean); err != nil {
			_ = removeAll(fsys, tmp)
			return fmt.Errorf("bwkv: restore %s: remove the empty target: %w", dir, err)
		}
	}
	if err := fsys.Rename(tmp, clean); err != nil {
		_ = removeAll(fsys, tmp)
		return fmt.Errorf("bwkv: restore %s: rename into place: %w", dir, err)
	}
	if err := fsys.SyncDir(filepath.Dir(clean)); err != nil {
		return fmt.Errorf("bwkv: restore %s: sync parent directory: %w", dir, err)
	}
	return nil
}

// checkRestoreTarget refuses a target that exists and is not an empty
// directory; it reports whether an empty directory is there.
func checkRestoreTarget(fsys vfs.FS, dir string) (empty bool, err error) {
	info, err := fsys.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("bwkv: restore %s: %w", dir, err)
	}
	if !info.IsDir() {
		return false, fmt.Errorf("bwkv: restore %s: exists and is not a directory: %w", dir, fs.ErrExist)
	}
	names, err := fsys.List(dir)
	if err != nil {
		return false, fmt.Errorf("bwkv: restore %s: %w", dir, err)
	}
	if len(names) > 0 {
		what := "is not empty"
		for _, n := range names {
			if n == walDir || n == lockName || n == "CURRENT" {
				what = "holds a database"
			}
		}
		return false, fmt.Errorf("bwkv: restore %s: the directory %s: %w", dir, what, fs.ErrExist)
	}
	return true, nil
}

// restoreTxID is the txid of every restored version: below the oracle and
// retired, so visible to every reader of the new database.
const restoreTxID = 1

// restoreInto creates a database in tmp and bulk-loads the stream into it.
func restoreInto(tmp string, br *BackupReader, o *Options) error {
	if _, err := o.FS.Stat(tmp); err == nil {
		return fmt.Errorf("temporary directory %s exists: %w", tmp, fs.ErrExist)
	}
	db, err := Open(tmp, o)
	if err != nil {
		return err
	}
	err = db.bulkLoad(br)
	if err == nil {
		err = db.Checkpoint()
	}
	if cerr := db.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// bulkLoad builds the tree from the stream, bottom-up, as versions of a
// retired txn: pages are built once each, in key order (tree.BulkLoad),
// with no log record, transaction or conflict check per key (the database
// is new and private to Restore, and a crash loses only the temporary
// directory). Checkpoints write the pages as dirty bytes pass
// CheckpointBytes, as for ordinary writes.
func (db *DB) bulkLoad(br *BackupReader) error {
	db.mv.AdvanceTo(restoreTxID)
	db.mv.RetireAll()
	next := func() ([]byte, []byte, bool, error) {
		key, val, err := br.Next()
		if err == io.EOF {
			return nil, nil, false, nil
		}
		if err != nil {
			return nil, nil, false, err
		}
		if err := db.checkKey(key); err != nil {
			return nil, nil, false, err
		}
		if err := db.checkValue(val); err != nil {
			return nil, nil, false, err
		}
		return key, val, true, nil
	}
	pause := func() {
		db.afterWrite()
		db.backpressure()
	}
	if err := db.tree.BulkLoad(next, restoreTxID, pause); err != nil {
		return err
	}
	if db.closed.Load() {
		return ErrClosed
	}
	return nil
}

// removeAll removes dir and everything below it through fsys.
func removeAll(fsys vfs.FS, dir string) error {
	info, err := fsys.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.IsDir() {
		names, err := fsys.List(dir)
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := removeAll(fsys, filepath.Join(dir, n)); err != nil {
				return err
			}
		}
	}
	return fsys.Remove(dir)
}
