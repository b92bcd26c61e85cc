package wal

import (
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestLSNSeed: the seed is the CRC-32C of the LSN's eight little-endian
// bytes, as logs written before it was computed by hand hold it, and
// computing it allocates nothing.
func TestLSNSeed(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	table := crc32.MakeTable(crc32.Castagnoli)
	for i := 0; i < 10000; i++ {
		lsn := LSN(rng.Uint64())
		switch i {
		case 0:
			lsn = 0
		case 1:
			lsn = ^LSN(0)
		case 2:
			lsn = 1
		}
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(lsn))
		if got, want := lsnSeed(lsn), crc32.Checksum(b[:], table); got != want {
			t.Fatalf("lsnSeed(%d) = %#x, want %#x", lsn, got, want)
		}
	}
	if a := testing.AllocsPerRun(100, func() { _ = lsnSeed(LSN(12345)) }); a != 0 {
		t.Fatalf("lsnSeed allocates %.1f objects", a)
	}
}
