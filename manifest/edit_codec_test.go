package manifest

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/bwkv/bwkv/internal/base"
)

// codecCases holds one edit per field, plus a combination, for the
// round-trip table.
var codecCases = []struct {
	name string
	e    Edit
}{
	{"empty", Edit{}},
	{"format version", Edit{Has: HasFormatVersion, FormatVersion: 1}},
	{"options", Edit{Has: HasOptions, Options: FormatOptions{PageSplitEntries: 64, BlobThreshold: 1 << 20, MaxKeySize: 4096, Compression: "zstd"}}},
	{"zero options", Edit{Has: HasOptions}},
	{"options with max value size", Edit{Has: HasOptions, Options: FormatOptions{MaxKeySize: 16, MaxValueSize: 1 << 30}}},
	{"log synced", Edit{Has: HasLogSynced, LogSynced: 1 << 33}},
	{"next pid", Edit{Has: HasNextPID, NextPID: 77}},
	{"next addr", Edit{Has: HasNextAddr, NextAddr: math.MaxUint64}},
	{"next file id", Edit{Has: HasNextFileID, NextFileID: 9}},
	{"oracle", Edit{Has: HasOracle, Oracle: 1 << 40}},
	{"next manifest", Edit{Has: HasNextManifest, NextManifest: 3}},
	{"frontier", Edit{Has: HasFrontier, Frontier: 12345}},
	{"analysis start", Edit{Has: HasAnalysisStart, AnalysisStart: 0}},
	{"stage file", Edit{Has: HasStageFile, StageFile: 4}},
	{"clear stage", Edit{Has: HasStageFile, StageFile: NoFile}},
	{"set pages", Edit{SetPages: []PageEntry{{PID: 1, Addr: 100}, {PID: 0, Addr: 0}, {PID: math.MaxUint64, Addr: 7}}}},
	{"remove pages", Edit{RemovePages: []uint64{5, 3, 1 << 62}}},
	{"add ranges", Edit{AddRanges: []Range{{Lo: 0, Hi: 10, File: 1}, {Lo: 10, Hi: 1 << 50, File: 2}}}},
	{"remove ranges", Edit{RemoveRanges: []Range{{Lo: 3, Hi: 4, File: 7}}}},
	{"add files", Edit{AddFiles: []FileMeta{{ID: 1, Total: 4096, Live: 100}, {ID: 2}}}},
	{"file stats", Edit{FileStats: []FileMeta{{ID: 3, Total: math.MaxInt64, Live: -1}}}},
	{"pending deletes", Edit{PendingDeletes: []FileID{8, 2}}},
	{"deleted files", Edit{DeletedFiles: []FileID{1}}},
	{"everything", Edit{
		Has: allFields, FormatVersion: 1, Options: FormatOptions{PageSplitEntries: 1, Compression: "x", MaxValueSize: 9},
		LogSynced: 10,
		NextPID:   1, NextAddr: 2, NextFileID: 3, Oracle: 4, NextManifest: 5, Frontier: 6, AnalysisStart: 7, StageFile: 8,
		SetPages: []PageEntry{{1, 2}}, RemovePages: []uint64{3}, AddRanges: []Range{{1, 2, 3}},
		RemoveRanges: []Range{{4, 5, 6}}, AddFiles: []FileMeta{{1, 2, 3}}, FileStats: []FileMeta{{4, 5, 6}},
		PendingDeletes: []FileID{7}, DeletedFiles: []FileID{8},
	}},
}

func TestEditRoundTrip(t *testing.T) {
	for _, tc := range codecCases {
		t.Run(tc.name, func(t *testing.T) {
			enc := tc.e.Encode(nil)
			got, err := DecodeEdit(enc)
			if err != nil {
				t.Fatalf("DecodeEdit: %v", err)
			}
			if !reflect.DeepEqual(*got, tc.e) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", *got, tc.e)
			}
			if re := got.Encode(nil); !bytes.Equal(re, enc) {
				t.Fatalf("re-encoding differs:\n got %x\nwant %x", re, enc)
			}
			// Encode appends.
			if pre := tc.e.Encode([]byte("ab")); !bytes.Equal(pre[2:], enc) || string(pre[:2]) != "ab" {
				t.Fatalf("Encode does not append to dst")
			}
		})
	}
}

// TestEditPresence checks that a scalar encodes only when flagged: a value
// without its flag is dropped, and a flagged zero survives.
func TestEditPresence(t *testing.T) {
	got, err := DecodeEdit((&Edit{NextPID: 5, Frontier: 9}).Encode(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, Edit{}) {
		t.Fatalf("unflagged fields encoded: %+v", *got)
	}
	got, err = DecodeEdit((&Edit{Has: HasNextPID}).Encode(nil))
	if err != nil || got.Has != HasNextPID || got.NextPID != 0 {
		t.Fatalf("flagged zero lost: %+v, %v", got, err)
	}
}

func TestDecodeEditErrors(t *testing.T) {
	cases := []struct {
		name    string
		in      []byte
		version bool
	}{
		{"empty", nil, false},
		{"version 0", []byte{0}, false},
		{"newer version", []byte{2, tagNextPID, 1}, true},
		{"unknown tag", []byte{1, 99, 0}, false},
		{"repeated tag", []byte{1, tagNextPID, 1, tagNextPID, 2}, false},
		{"decreasing tags", []byte{1, tagNextAddr, 1, tagNextPID, 2}, false},
		{"tag zero", []byte{1, 0, 1}, false},
		{"non-minimal varint", []byte{1, tagNextPID, 0x81, 0x00}, false},
		{"truncated varint", []byte{1, tagNextPID, 0x81}, false},
		{"missing value", []byte{1, tagNextPID}, false},
		{"varint overflow", append([]byte{1, tagNextPID}, bytes.Repeat([]byte{0xff}, 10)...), false},
		{"empty list", []byte{1, tagRemovePages, 0}, false},
		{"count past input", []byte{1, tagRemovePages, 5, 1, 2}, false},
		{"huge count", []byte{1, tagSetPages, 0xff, 0xff, 0xff, 0xff, 0x0f}, false},
		{"truncated list", []byte{1, tagSetPages, 1, 7}, false},
		{"codec past end", []byte{1, tagOptions, 0, 0, 0, 5, 'z'}, false},
		{"negative option", (&Edit{Has: HasOptions, Options: FormatOptions{MaxKeySize: -1}}).Encode(nil), false},
		{"codec too long", append([]byte{1, tagOptions, 0, 0, 0, 0x80, 0x02}, make([]byte, 256)...), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := DecodeEdit(tc.in)
			if err == nil {
				t.Fatalf("decoded %+v, want an error", e)
			}
			if got := errors.Is(err, base.ErrVersion); got != tc.version {
				t.Fatalf("errors.Is(%v, base.ErrVersion) = %v, want %v", err, got, tc.version)
			}
			var ce *base.CorruptionError
			if !tc.version && !errors.As(err, &ce) {
				t.Fatalf("error %v (%T) is not a *base.CorruptionError", err, err)
			}
		})
	}
}

func TestFrame(t *testing.T) {
	payload := (&Edit{Has: HasNextPID, NextPID: 3}).Encode(nil)
	f := appendFrame(nil, payload)
	got, size, ok := frameAt(f, 0)
	if !ok || size != len(f) || !bytes.Equal(got, payload) {
		t.Fatalf("frameAt = %x, %d, %v", got, size, ok)
	}
	for i := range f {
		bad := bytes.Clone(f)
		bad[i] ^= 0x10
		if _, _, ok := frameAt(bad, 0); ok {
			t.Fatalf("flip in byte %d not detected", i)
		}
	}
	if _, _, ok := frameAt(f[:len(f)-1], 0); ok {
		t.Fatal("short frame accepted")
	}
	if _, _, ok := frameAt(make([]byte, 32), 0); ok {
		t.Fatal("zero frame accepted")
	}
}

// TestEditMaxValueSizeNeedsOptions: the max-value-size tag is part of the
// format options; alone, or zero, it is not a canonical encoding.
func TestEditMaxValueSizeNeedsOptions(t *testing.T) {
	for name, enc := range map[string][]byte{
		"without options": {editEncoding, tagMaxValueSize, 5},
		"zero":            append((&Edit{Has: HasOptions}).Encode(nil), tagMaxValueSize, 0),
	} {
		var ce *base.CorruptionError
		if _, err := DecodeEdit(enc); !errors.As(err, &ce) {
			t.Errorf("%s: DecodeEdit(%x) = %v, want *base.CorruptionError", name, enc, err)
		}
	}
}
