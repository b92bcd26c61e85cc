package manifest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/bwkv/bwkv/internal/base"
)

// FuzzDecodeEdit frames the input as a record with a valid CRC, so the
// fuzzer reaches the decoder and Apply behind the checksum, and replays it
// as a manifest file after a valid snapshot. Properties: no panic; every
// error is a *base.CorruptionError or wraps base.ErrVersion; an accepted payload
// re-encodes to the same bytes; the resulting state's snapshot replays to
// an equal state.
func FuzzDecodeEdit(f *testing.F) {
	for _, tc := range codecCases {
		f.Add(tc.e.Encode(nil))
	}
	g := newGen(21)
	for range 20 {
		f.Add(g.next(f).Encode(nil))
	}
	f.Add(g.shadow.Snapshot().Encode(nil))
	f.Add([]byte{})
	f.Add([]byte{2})

	base := appendFrame(nil, (&Edit{Has: HasNextManifest | HasNextPID | HasNextAddr | HasNextFileID,
		NextManifest: 2, NextPID: 1 << 20, NextAddr: 1 << 40, NextFileID: 1 << 10}).Encode(nil))
	f.Fuzz(func(t *testing.T, payload []byte) {
		e, derr := DecodeEdit(payload)
		checkErr(t, "DecodeEdit", derr)
		if derr == nil {
			if re := e.Encode(nil); !bytes.Equal(re, payload) {
				t.Fatalf("re-encoding differs:\n got %x\nwant %x", re, payload)
			}
		}
		if len(payload) == 0 || len(payload) > maxPayload {
			return // not a frame: replay would call it a torn tail
		}
		data := appendFrame(bytes.Clone(base), payload)
		st, info, err := replay(data, "fuzz")
		checkErr(t, "replay", err)
		if derr != nil && err == nil {
			t.Fatalf("replay accepted a payload DecodeEdit rejects: %v", derr)
		}
		if err != nil {
			return
		}
		if info.records != 2 || info.validEnd != int64(len(data)) || info.torn != 0 {
			t.Fatalf("replay info %+v for %d bytes", info, len(data))
		}
		snap := st.Snapshot().Encode(nil)
		st2, _, err := replay(appendFrame(nil, snap), "snapshot")
		if err != nil {
			t.Fatalf("snapshot does not replay: %v", err)
		}
		if !bytes.Equal(st2.Snapshot().Encode(nil), snap) {
			t.Fatal("snapshot replays to a different state")
		}
	})
}

func checkErr(t *testing.T, what string, err error) {
	t.Helper()
	var ce *base.CorruptionError
	if err != nil && !errors.As(err, &ce) && !errors.Is(err, base.ErrVersion) {
		t.Fatalf("%s: error %v (%T) is neither corruption nor base.ErrVersion", what, err, err)
	}
}

// FuzzReplay feeds whole manifest files to replay: no panic, only typed
// errors, and a file with a torn tail replays like its valid prefix.
func FuzzReplay(f *testing.F) {
	g := newGen(22)
	var file []byte
	snap := NewState().Snapshot()
	snap.NextManifest = 2
	file = appendFrame(file, snap.Encode(nil))
	for range 10 {
		file = appendFrame(file, g.next(f).Encode(nil))
		f.Add(bytes.Clone(file))
	}
	f.Add(append(bytes.Clone(file), 1, 0, 0, 0, 9))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, info, err := replay(data, "fuzz")
		checkErr(t, "replay", err)
		if err != nil {
			return
		}
		if info.validEnd+info.torn != int64(len(data)) {
			t.Fatalf("info %+v for %d bytes", info, len(data))
		}
		st2, info2, err := replay(data[:info.validEnd], "prefix")
		if err != nil || info2.torn != 0 || info2.records != info.records {
			t.Fatalf("valid prefix replays differently: %+v, %v", info2, err)
		}
		if !bytes.Equal(snapBytes(st), snapBytes(st2)) {
			t.Fatal("valid prefix replays to a different state")
		}
	})
}
