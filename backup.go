package bwkv

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
)

// The backup stream (Snapshot.WriteTo, Restore) is self-describing and
// versioned. All integers are little-endian.
//
//	stream  = magic[8] version[u32] frame(header) frame(data)* frame(trailer)
//	frame   = kind[u8] index[u64] length[u32] payload[length] crc[u32]
//
// The crc is CRC-32C over kind, index, length and payload. Frames are
// numbered from 0 (the header) without gaps, so a dropped, repeated or
// reordered frame is caught even when each frame is intact. The header
// payload holds uvarints: the snapshot timestamp, PageSplitEntries,
// BlobThreshold, MaxKeySize and MaxValueSize, then the compression name and
// the user metadata as length-prefixed bytes. A data payload is a run of
// entries, uvarint key length, key, uvarint value length, value, with keys
// strictly increasing across the whole stream. The trailer holds the key
// count [u64], the key and value byte count [u64] and the SHA-256 of every
// data payload in order [32]; nothing may follow it.
const (
	backupMagic   = "bwkvbak\x00"
	backupVersion = 1

	frameHeader  byte = 'H'
	frameData    byte = 'D'
	frameTrailer byte = 'T'

	frameOverhead = 1 + 8 + 4 + 4
	// backupChunkBytes is a data frame's target payload size: a frame
	// holds entries until it reaches this, so the writer's memory is
	// bounded by it plus one entry.
	backupChunkBytes = 256 << 10
	// maxBackupMetadata bounds the user metadata in the header.
	maxBackupMetadata = 1 << 20
	trailerBytes      = 8 + 8 + sha256.Size
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BackupOptions configure Snapshot.Backup.
type BackupOptions struct {
	// Metadata is stored verbatim in the stream's header (at most 1 MiB)
	// and returned by ReadBackupHeader; bwkv does not interpret it.
	Metadata []byte
}

// BackupHeader describes a backup stream: what ReadBackupHeader returns.
type BackupHeader struct {
	// Version is the stream format version.
	Version uint32
	// SnapshotTS is the timestamp of the snapshot the stream holds.
	SnapshotTS uint64
	// The format options of the database the stream was taken from.
	// Restore uses them for any of these fields its Options leave zero.
	PageSplitEntries, BlobThreshold, MaxKeySize, MaxValueSize int
	Compression                                               string
	// Metadata is the caller's BackupOptions.Metadata.
	Metadata []byte
}

// WriteTo writes the snapshot's keys and values to w as a backup stream
// (see Restore) and returns the number of bytes written. It makes a
// Snapshot an io.WriterTo. It streams from an iterator: memory stays
// bounded whatever the database's size, and writers keep running; the
// stream holds exactly the snapshot's state. It is WriteTo's only
// difference from Backup(w, nil).
func (s *Snapshot) WriteTo(w io.Writer) (int64, error) {
	return s.Backup(w, nil)
}

// Backup is WriteTo with options (user metadata in the header).
func (s *Snapshot) Backup(w io.Writer, o *BackupOptions) (int64, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	var meta []byte
	if o != nil {
		meta = o.Metadata
	}
	if len(meta) > maxBackupMetadata {
		return 0, fmt.Errorf("bwkv: backup: metadata of %d bytes > %d", len(meta), maxBackupMetadata)
	}
	bw := &backupWriter{w: w, hash: sha256.New()}
	db := s.db
	f := db.format
	hdr := binary.LittleEndian.AppendUint32([]byte(backupMagic), backupVersion)
	if err := bw.write(hdr); err != nil {
		return bw.n, err
	}
	var p []byte
	p = binary.AppendUvarint(p, s.r.Start())
	p = binary.AppendUvarint(p, uint64(f.PageSplitEntries))
	p = binary.AppendUvarint(p, uint64(f.BlobThreshold))
	p = binary.AppendUvarint(p, uint64(f.MaxKeySize))
	p = binary.AppendUvarint(p, uint64(db.opts.MaxValueSize))
	p = appendBytes(p, []byte(f.Compression))
	p = appendBytes(p, meta)
	if err := bw.frame(frameHeader, p); err != nil {
		return bw.n, err
	}
	it, err := s.NewIter(nil)
	if err != nil {
		return bw.n, err
	}
	defer it.Close()
	var keys, bytes uint64
	chunk := make([]byte, 0, backupChunkBytes+1024)
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		chunk = appendBytes(chunk, k)
		chunk = appendBytes(chunk, v)
		keys++
		bytes += uint64(len(k) + len(v))
		if len(chunk) >= backupChunkBytes {
			if err := bw.data(chunk); err != nil {
				return bw.n, err
			}
			chunk = chunk[:0]
		}
	}
	if err := it.Error(); err != nil {
		return bw.n, fmt.Errorf("bwkv: backup: scan: %w", err)
	}
	if len(chunk) > 0 {
		if err := bw.data(chunk); err != nil {
			return bw.n, err
		}
	}
	t := make([]byte, 0, trailerBytes)
	t = binary.LittleEndian.AppendUint64(t, keys)
	t = binary.LittleEndian.AppendUint64(t, bytes)
	t = bw.hash.Sum(t)
	if err := bw.frame(frameTrailer, t); err != nil {
		return bw.n, err
	}
	return bw.n, nil
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// backupWriter frames payloads and counts the bytes written.
type backupWriter struct {
	w     io.Writer
	n     int64
	index uint64
	hash  hash.Hash
	buf   []byte // frame header and crc, reused
}

func (bw *backupWriter) write(b []byte) error {
	n, err := bw.w.Write(b)
	bw.n += int64(n)
	if err != nil {
		return fmt.Errorf("bwkv: backup: write: %w", err)
	}
	return nil
}

func (bw *backupWriter) data(p []byte) error {
	bw.hash.Write(p)
	return bw.frame(frameData, p)
}

func (bw *backupWriter) frame(kind byte, p []byte) error {
	h := append(bw.buf[:0], kind)
	h = binary.LittleEndian.AppendUint64(h, bw.index)
	h = binary.LittleEndian.AppendUint32(h, uint32(len(p)))
	crc := crc32.Update(crc32.Checksum(h, castagnoli), castagnoli, p)
	bw.index++
	if err := bw.write(h); err != nil {
		return err
	}
	if err := bw.write(p); err != nil {
		return err
	}
	bw.buf = binary.LittleEndian.AppendUint32(h[:0], crc)
	return bw.write(bw.buf)
}
