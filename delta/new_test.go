package delta_test

import (
	"bytes"
	"testing"

	"github.com/bwkv/bwkv/delta"
)

// TestNewCopies checks that a delta's key and value are its own: writing
// to the caller's slices after New changes neither, for empty and
// non-empty keys and values, and the two do not overlap.
func TestNewCopies(t *testing.T) {
	for _, tc := range []struct{ k, v int }{{5, 9}, {32, 1024}, {7, 0}, {0, 11}, {0, 0}} {
		key := bytes.Repeat([]byte{'k'}, tc.k)
		val := bytes.Repeat([]byte{'v'}, tc.v)
		// Spare capacity in the caller's slices must not be written into.
		key = append(make([]byte, 0, tc.k+64), key...)
		val = append(make([]byte, 0, tc.v+64), val...)
		d := delta.New(key, val, 3, 4, delta.Tombstone)
		for i := range key {
			key[i] = 'x'
		}
		for i := range val {
			val[i] = 'y'
		}
		if !bytes.Equal(d.Key, bytes.Repeat([]byte{'k'}, tc.k)) || !bytes.Equal(d.Value, bytes.Repeat([]byte{'v'}, tc.v)) {
			t.Fatalf("%d/%d: delta holds %q / %q after the caller's bytes changed", tc.k, tc.v, d.Key, d.Value)
		}
		if key[:cap(key)][len(key)] != 0 {
			t.Fatalf("%d/%d: New wrote past the caller's key", tc.k, tc.v)
		}
		if cap(d.Key) != len(d.Key) || cap(d.Value) != len(d.Value) {
			t.Fatalf("%d/%d: key cap %d len %d, value cap %d len %d: an append would write into the other", tc.k, tc.v, cap(d.Key), len(d.Key), cap(d.Value), len(d.Value))
		}
		if d.TxID != 3 || d.Seq != 4 || d.Flags != delta.Tombstone {
			t.Fatalf("%d/%d: header %d %d %v", tc.k, tc.v, d.TxID, d.Seq, d.Flags)
		}
	}
}

// BenchmarkNew is a write's copy of its key and a 1 KiB value.
func BenchmarkNew(b *testing.B) {
	key := bytes.Repeat([]byte{'k'}, 32)
	val := bytes.Repeat([]byte{'v'}, 1024)
	b.ReportAllocs()
	for b.Loop() {
		_ = delta.New(key, val, 1, 1, 0)
	}
}
