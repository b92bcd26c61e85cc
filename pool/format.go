package pool

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/bwkv/bwkv/delta"
)

// FormatVersion is the newest data-file format version this code reads
// and the one it writes. Version 2 adds each frame's page ID to its table
// entry; version 1 files (24-byte entries, no PID) stay readable.
const FormatVersion = 2

// Footer and table layout (see doc.go).
const (
	ftTableOff  = 0
	ftTableLen  = 8
	ftCount     = 16
	ftMinAddr   = 24
	ftMaxAddr   = 32
	ftTableCRC  = 40
	ftFlags     = 44
	ftVersion   = 48
	ftFooterCRC = 52
	ftMagic     = 56
	footerSize  = 64

	tableEntrySizeV1 = 24 // addr, offset, length, crc
	tableEntrySize   = 32 // version 2: the same, then pid u64

	footerMagic = "bwkvdata"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entry is one relocation-table entry: where the frame at addr lies.
type entry struct {
	addr uint64
	off  int64
	len  uint32
	crc  uint32
	pid  uint64 // 0 in a version 1 file: unknown
}

// FrameRef says where a frame lies in its data file.
type FrameRef struct {
	Addr   uint64
	Offset int64
	Len    int
	// CRC is the frame's own checksum, as the table records it.
	CRC uint32
}

func (e entry) ref() FrameRef {
	return FrameRef{Addr: e.addr, Offset: e.off, Len: int(e.len), CRC: e.crc}
}

// footer is a decoded footer.
type footer struct {
	version            uint32
	tableOff, tableLen uint64
	count              uint64
	minAddr, maxAddr   uint64
	tableCRC           uint32
}

// footerChecksum is the CRC of a footer's bytes but its CRC field.
func footerChecksum(b []byte) uint32 {
	return crc32.Update(crc32.Update(0, castagnoli, b[:ftFooterCRC]), castagnoli, b[ftFooterCRC+4:footerSize])
}

// appendFooter appends the encoding of ft.
func appendFooter(dst []byte, ft footer) []byte {
	var b [footerSize]byte
	binary.LittleEndian.PutUint64(b[ftTableOff:], ft.tableOff)
	binary.LittleEndian.PutUint64(b[ftTableLen:], ft.tableLen)
	binary.LittleEndian.PutUint64(b[ftCount:], ft.count)
	binary.LittleEndian.PutUint64(b[ftMinAddr:], ft.minAddr)
	binary.LittleEndian.PutUint64(b[ftMaxAddr:], ft.maxAddr)
	binary.LittleEndian.PutUint32(b[ftTableCRC:], ft.tableCRC)
	binary.LittleEndian.PutUint32(b[ftVersion:], FormatVersion)
	copy(b[ftMagic:], footerMagic)
	binary.LittleEndian.PutUint32(b[ftFooterCRC:], footerChecksum(b[:]))
	return append(dst, b[:]...)
}

// decodeFooter validates the footer b (footerSize bytes) of a file of size
// bytes, whose footer starts at size-footerSize. Offsets in errors are file
// offsets.
func decodeFooter(b []byte, size int64) (footer, error) {
	at := size - footerSize
	if string(b[ftMagic:]) != footerMagic {
		return footer{}, corruptAt(at+ftMagic, "bad footer magic %q: truncated, or not a data file", b[ftMagic:])
	}
	if stored, got := binary.LittleEndian.Uint32(b[ftFooterCRC:]), footerChecksum(b); stored != got {
		return footer{}, corruptAt(at+ftFooterCRC, "footer checksum mismatch: stored %08x, computed %08x", stored, got)
	}
	v := binary.LittleEndian.Uint32(b[ftVersion:])
	switch {
	case v > FormatVersion:
		return footer{}, &versionError{version: v}
	case v == 0:
		return footer{}, corruptAt(at+ftVersion, "format version 0")
	}
	if fl := binary.LittleEndian.Uint32(b[ftFlags:]); fl != 0 {
		return footer{}, corruptAt(at+ftFlags, "unknown footer flags %#x", fl)
	}
	ft := footer{
		version:  v,
		tableOff: binary.LittleEndian.Uint64(b[ftTableOff:]),
		tableLen: binary.LittleEndian.Uint64(b[ftTableLen:]),
		count:    binary.LittleEndian.Uint64(b[ftCount:]),
		minAddr:  binary.LittleEndian.Uint64(b[ftMinAddr:]),
		maxAddr:  binary.LittleEndian.Uint64(b[ftMaxAddr:]),
		tableCRC: binary.LittleEndian.Uint32(b[ftTableCRC:]),
	}
	body := uint64(at) // frames and table
	switch {
	case ft.tableLen > body || ft.tableOff != body-ft.tableLen:
		return footer{}, corruptAt(at+ftTableOff, "table at %d of %d bytes does not end where the footer starts (%d)", ft.tableOff, ft.tableLen, at)
	case ft.count > ft.tableLen/ft.entrySize() || ft.count*ft.entrySize() != ft.tableLen:
		return footer{}, corruptAt(at+ftCount, "%d frames need a %d-entry table, not %d bytes", ft.count, ft.count, ft.tableLen)
	case ft.count == 0 && (ft.minAddr != 0 || ft.maxAddr != 0 || ft.tableOff != 0):
		return footer{}, corruptAt(at+ftMinAddr, "empty file with address range [%d, %d] and %d frame bytes", ft.minAddr, ft.maxAddr, ft.tableOff)
	case ft.count > 0 && (ft.minAddr == 0 || ft.minAddr > ft.maxAddr):
		return footer{}, corruptAt(at+ftMinAddr, "bad address range [%d, %d]", ft.minAddr, ft.maxAddr)
	case ft.count > 0 && ft.tableOff < ft.count*delta.FrameHeaderSize:
		return footer{}, corruptAt(at+ftTableOff, "%d frames cannot fit in %d bytes", ft.count, ft.tableOff)
	}
	return ft, nil
}

// entrySize is the table entry size of the footer's format version.
func (ft footer) entrySize() uint64 {
	if ft.version == 1 {
		return tableEntrySizeV1
	}
	return tableEntrySize
}

// appendEntry appends the encoding of one table entry (version 2).
func appendEntry(dst []byte, e entry) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, e.addr)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(e.off))
	dst = binary.LittleEndian.AppendUint32(dst, e.len)
	dst = binary.LittleEndian.AppendUint32(dst, e.crc)
	return binary.LittleEndian.AppendUint64(dst, e.pid)
}

// parseTable validates the table bytes b against ft and returns the table
// as File keeps it. Offsets in errors are file offsets.
func parseTable(b []byte, ft footer) (table, error) {
	at := int64(ft.tableOff)
	if got := crc32.Checksum(b, castagnoli); got != ft.tableCRC {
		return table{}, corruptAt(at, "table checksum mismatch: footer says %08x, computed %08x", ft.tableCRC, got)
	}
	t := table{addrs: make([]uint64, ft.count), slots: make([]slot, ft.count)}
	next := uint64(0) // where the next frame must start
	size := int(ft.entrySize())
	for i := range t.addrs {
		p := b[i*size:]
		addr := binary.LittleEndian.Uint64(p)
		e := slot{
			len: binary.LittleEndian.Uint32(p[16:]),
			crc: binary.LittleEndian.Uint32(p[20:]),
		}
		if size == tableEntrySize {
			e.pid = binary.LittleEndian.Uint64(p[24:])
		}
		off := binary.LittleEndian.Uint64(p[8:])
		eat := at + int64(i*size)
		switch {
		case addr == 0:
			return table{}, corruptAt(eat, "table entry %d: address 0", i)
		case size == tableEntrySize && e.pid == 0:
			return table{}, corruptAt(eat+24, "table entry %d: page 0", i)
		case i > 0 && addr <= t.addrs[i-1]:
			return table{}, corruptAt(eat, "table entry %d: address %d does not ascend from %d", i, addr, t.addrs[i-1])
		case off != next:
			return table{}, corruptAt(eat+8, "table entry %d: frame at %d, not %d where the previous one ends", i, off, next)
		case e.len < delta.FrameHeaderSize:
			return table{}, corruptAt(eat+16, "table entry %d: frame length %d is shorter than a frame header", i, e.len)
		case uint64(e.len) > ft.tableOff-off:
			return table{}, corruptAt(eat+16, "table entry %d: frame of %d bytes at %d overruns the table at %d", i, e.len, off, ft.tableOff)
		}
		e.off = int64(off)
		next = off + uint64(e.len)
		t.addrs[i], t.slots[i] = addr, e
	}
	switch {
	case next != ft.tableOff:
		return table{}, corruptAt(int64(next), "%d bytes between the last frame and the table", ft.tableOff-next)
	case ft.count > 0 && (t.addrs[0] != ft.minAddr || t.addrs[ft.count-1] != ft.maxAddr):
		return table{}, corruptAt(at, "table spans addresses [%d, %d], the footer says [%d, %d]",
			t.addrs[0], t.addrs[ft.count-1], ft.minAddr, ft.maxAddr)
	}
	t.sample = sampleOf(t.addrs)
	return t, nil
}
