package manifest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/bwkv/bwkv/internal/base"
)

// snapBytes is a canonical encoding of a state: equal states give equal
// bytes (Snapshot sorts).
func snapBytes(s *State) []byte { return s.Snapshot().Encode(nil) }

// checkIndexes verifies the private indexes Apply maintains.
func checkIndexes(t *testing.T, s *State) {
	t.Helper()
	count := map[FileID]int{}
	for i, r := range s.ranges {
		if r.Lo >= r.Hi || (i > 0 && s.ranges[i-1].Hi > r.Lo) {
			t.Fatalf("ranges not sorted and disjoint: %v", s.ranges)
		}
		count[r.File]++
	}
	if len(count) != len(s.rangeCount) {
		t.Fatalf("rangeCount %v, want %v", s.rangeCount, count)
	}
	for f, n := range count {
		if s.rangeCount[f] != n {
			t.Fatalf("rangeCount %v, want %v", s.rangeCount, count)
		}
	}
}

// baseState: files 1, 2, 3 live, 4 retired; ranges [0,100)->1,
// [100,200)->2, [300,400)->3; pages 1@10, 2@150.
func baseState(t *testing.T) *State {
	t.Helper()
	s := NewState()
	edits := []*Edit{
		{Has: HasFormatVersion | HasOptions | HasNextPID | HasNextAddr | HasNextFileID | HasOracle | HasFrontier | HasAnalysisStart,
			FormatVersion: 1, Options: FormatOptions{PageSplitEntries: 32, Compression: "zstd"},
			NextPID: 100, NextAddr: 1000, NextFileID: 10, Oracle: 5, Frontier: 50, AnalysisStart: 40},
		{AddFiles: []FileMeta{{ID: 1, Total: 100, Live: 100}, {ID: 2, Total: 100, Live: 50}, {ID: 3, Total: 100}, {ID: 4}},
			AddRanges:      []Range{{Lo: 100, Hi: 200, File: 2}, {Lo: 0, Hi: 100, File: 1}, {Lo: 300, Hi: 400, File: 3}},
			SetPages:       []PageEntry{{PID: 1, Addr: 10}, {PID: 2, Addr: 150}},
			PendingDeletes: []FileID{4}},
	}
	for i, e := range edits {
		if err := s.Apply(e); err != nil {
			t.Fatalf("base edit %d: %v", i, err)
		}
	}
	checkIndexes(t, s)
	return s
}

func TestApplyValid(t *testing.T) {
	cases := []struct {
		name  string
		e     Edit
		check func(*State) bool
	}{
		{"counters forward", Edit{Has: HasNextPID | HasOracle, NextPID: 200, Oracle: 5},
			func(s *State) bool { return s.NextPID == 200 && s.Oracle == 5 }},
		{"frontier and analysis", Edit{Has: HasFrontier | HasAnalysisStart, Frontier: 90, AnalysisStart: 90},
			func(s *State) bool { return s.Frontier == 90 && s.AnalysisStart == 90 }},
		{"set and remove pages", Edit{RemovePages: []uint64{1}, SetPages: []PageEntry{{PID: 2, Addr: 310}, {PID: 99, Addr: 999}}},
			func(s *State) bool { _, ok := s.Pages[1]; return !ok && s.Pages[2] == 310 && s.Pages[99] == 999 }},
		{"adjacent range", Edit{AddRanges: []Range{{Lo: 200, Hi: 300, File: 1}}},
			func(s *State) bool { f, ok := s.FileOf(299); return ok && f == 1 }},
		{"gc remap", Edit{Has: HasNextFileID, NextFileID: 11,
			AddFiles:       []FileMeta{{ID: 10, Total: 50, Live: 50}},
			RemoveRanges:   []Range{{Lo: 100, Hi: 200, File: 2}},
			AddRanges:      []Range{{Lo: 100, Hi: 200, File: 10}},
			PendingDeletes: []FileID{2}},
			func(s *State) bool {
				f, _ := s.FileOf(150)
				_, pend := s.PendingDeletes[2]
				_, live := s.Files[2]
				return f == 10 && pend && !live
			}},
		{"stage then add clears", Edit{Has: HasStageFile, StageFile: 5},
			func(s *State) bool { return s.StageFile == 5 }},
		{"file stats", Edit{FileStats: []FileMeta{{ID: 3, Total: 100, Live: 7}}},
			func(s *State) bool { return s.Files[3].Live == 7 }},
		{"delete retired", Edit{DeletedFiles: []FileID{4}},
			func(s *State) bool { return len(s.PendingDeletes) == 0 }},
		{"retire and delete in one edit", Edit{RemoveRanges: []Range{{Lo: 300, Hi: 400, File: 3}}, PendingDeletes: []FileID{3}, DeletedFiles: []FileID{3}},
			func(s *State) bool { _, ok := s.Files[3]; _, p := s.PendingDeletes[3]; return !ok && !p }},
		{"same format version", Edit{Has: HasFormatVersion, FormatVersion: 1},
			func(s *State) bool { return s.FormatVersion == 1 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := baseState(t)
			if err := s.Apply(&tc.e); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			checkIndexes(t, s)
			if !tc.check(s) {
				t.Fatalf("unexpected state after apply: %+v", s)
			}
			// The snapshot of every valid state reproduces it.
			r := NewState()
			if err := r.Apply(s.Snapshot()); err != nil {
				t.Fatalf("snapshot does not apply: %v", err)
			}
			if !bytes.Equal(snapBytes(r), snapBytes(s)) {
				t.Fatalf("snapshot state differs")
			}
		})
	}
}

func TestApplyStageCycle(t *testing.T) {
	s := baseState(t)
	steps := []Edit{
		{Has: HasStageFile | HasNextFileID, StageFile: 10, NextFileID: 11},
		{Has: HasStageFile, StageFile: 10}, // idempotent
		{Has: HasStageFile, StageFile: NoFile, AddFiles: []FileMeta{{ID: 10}},
			RemoveRanges: []Range{{Lo: 0, Hi: 100, File: 1}}, AddRanges: []Range{{Lo: 0, Hi: 100, File: 10}},
			PendingDeletes: []FileID{1}},
	}
	for i, e := range steps {
		if err := s.Apply(&e); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	checkIndexes(t, s)
}

func TestApplyInvalid(t *testing.T) {
	cases := []struct {
		name    string
		e       Edit
		version bool
	}{
		{"unknown flag", Edit{Has: allFields + 1}, false},
		{"newer format", Edit{Has: HasFormatVersion, FormatVersion: FormatVersion + 1}, true},
		{"format zero", Edit{Has: HasFormatVersion}, false},
		{"negative option", Edit{Has: HasOptions, Options: FormatOptions{BlobThreshold: -1}}, false},
		{"long codec", Edit{Has: HasOptions, Options: FormatOptions{Compression: string(make([]byte, 256))}}, false},
		{"next pid back", Edit{Has: HasNextPID, NextPID: 99}, false},
		{"next addr back", Edit{Has: HasNextAddr, NextAddr: 0}, false},
		{"next file back", Edit{Has: HasNextFileID, NextFileID: 9}, false},
		{"oracle back", Edit{Has: HasOracle, Oracle: 4}, false},
		{"next manifest back", Edit{Has: HasNextManifest, NextManifest: 0}, false},
		{"frontier back", Edit{Has: HasFrontier | HasAnalysisStart, Frontier: 49, AnalysisStart: 0}, false},
		{"analysis back", Edit{Has: HasAnalysisStart, AnalysisStart: 39}, false},
		{"analysis above frontier", Edit{Has: HasAnalysisStart, AnalysisStart: 51}, false},
		{"add file zero", Edit{AddFiles: []FileMeta{{ID: 0}}}, false},
		{"add file unallocated", Edit{AddFiles: []FileMeta{{ID: 10}}}, false},
		{"add file twice", Edit{AddFiles: []FileMeta{{ID: 5}, {ID: 5}}}, false},
		{"add registered file", Edit{AddFiles: []FileMeta{{ID: 1}}}, false},
		{"add retired file", Edit{AddFiles: []FileMeta{{ID: 4}}}, false},
		{"add file live above total", Edit{AddFiles: []FileMeta{{ID: 5, Total: 1, Live: 2}}}, false},
		{"add file negative", Edit{AddFiles: []FileMeta{{ID: 5, Total: -1}}}, false},
		{"remove missing range", Edit{RemoveRanges: []Range{{Lo: 0, Hi: 50, File: 1}}}, false},
		{"remove range wrong file", Edit{RemoveRanges: []Range{{Lo: 0, Hi: 100, File: 2}}}, false},
		{"remove range twice", Edit{RemoveRanges: []Range{{Lo: 0, Hi: 100, File: 1}, {Lo: 0, Hi: 100, File: 1}}}, false},
		{"empty range", Edit{AddRanges: []Range{{Lo: 500, Hi: 500, File: 1}}}, false},
		{"range past next addr", Edit{AddRanges: []Range{{Lo: 500, Hi: 1001, File: 1}}}, false},
		{"range of unknown file", Edit{AddRanges: []Range{{Lo: 500, Hi: 600, File: 7}}}, false},
		{"range of retired file", Edit{AddRanges: []Range{{Lo: 500, Hi: 600, File: 4}}}, false},
		{"range overlaps existing", Edit{AddRanges: []Range{{Lo: 250, Hi: 301, File: 1}}}, false},
		{"range inside existing", Edit{AddRanges: []Range{{Lo: 10, Hi: 20, File: 1}}}, false},
		{"range covers existing", Edit{AddRanges: []Range{{Lo: 200, Hi: 500, File: 1}}}, false},
		{"added ranges overlap", Edit{AddRanges: []Range{{Lo: 500, Hi: 600, File: 1}, {Lo: 550, Hi: 650, File: 2}}}, false},
		{"remap overlaps a kept neighbour", Edit{RemoveRanges: []Range{{Lo: 100, Hi: 200, File: 2}}, AddRanges: []Range{{Lo: 50, Hi: 200, File: 3}}}, false},
		{"remove missing page", Edit{RemovePages: []uint64{3}}, false},
		{"remove page twice", Edit{RemovePages: []uint64{1, 1}}, false},
		{"page unallocated", Edit{SetPages: []PageEntry{{PID: 100, Addr: 1}}}, false},
		{"page addr undrawn", Edit{SetPages: []PageEntry{{PID: 3, Addr: 1000}}}, false},
		{"set page twice", Edit{SetPages: []PageEntry{{PID: 3, Addr: 1}, {PID: 3, Addr: 2}}}, false},
		{"set and remove page", Edit{RemovePages: []uint64{1}, SetPages: []PageEntry{{PID: 1, Addr: 2}}}, false},
		{"stats of unknown file", Edit{FileStats: []FileMeta{{ID: 6}}}, false},
		{"stats of retired file", Edit{FileStats: []FileMeta{{ID: 4}}}, false},
		{"stats twice", Edit{FileStats: []FileMeta{{ID: 1}, {ID: 1}}}, false},
		{"bad stats", Edit{FileStats: []FileMeta{{ID: 1, Total: 5, Live: 6}}}, false},
		{"retire file with ranges", Edit{PendingDeletes: []FileID{1}}, false},
		{"retire file given a range", Edit{AddFiles: []FileMeta{{ID: 5}}, AddRanges: []Range{{Lo: 500, Hi: 600, File: 5}}, PendingDeletes: []FileID{5}}, false},
		{"retire unknown file", Edit{PendingDeletes: []FileID{6}}, false},
		{"retire twice", Edit{AddFiles: []FileMeta{{ID: 5}}, PendingDeletes: []FileID{5, 5}}, false},
		{"retire retired", Edit{PendingDeletes: []FileID{4}}, false},
		{"delete live file", Edit{DeletedFiles: []FileID{1}}, false},
		{"delete twice", Edit{DeletedFiles: []FileID{4, 4}}, false},
		{"stage unallocated", Edit{Has: HasStageFile, StageFile: 10}, false},
		{"stage registered", Edit{Has: HasStageFile, StageFile: 1}, false},
		{"stage retired", Edit{Has: HasStageFile, StageFile: 4}, false},
		{"stage then add without clearing", Edit{Has: HasStageFile, StageFile: 5, AddFiles: []FileMeta{{ID: 5}}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := baseState(t)
			before := snapBytes(s)
			err := s.Apply(&tc.e)
			if err == nil {
				t.Fatal("Apply accepted an invalid edit")
			}
			if got := errors.Is(err, base.ErrVersion); got != tc.version {
				t.Fatalf("errors.Is(%v, base.ErrVersion) = %v, want %v", err, got, tc.version)
			}
			var ce *base.CorruptionError
			if !tc.version && !errors.As(err, &ce) {
				t.Fatalf("error %v (%T) is not a *base.CorruptionError", err, err)
			}
			if !bytes.Equal(snapBytes(s), before) {
				t.Fatal("a rejected edit changed the state")
			}
			checkIndexes(t, s)
		})
	}
}

func TestApplySecondStage(t *testing.T) {
	s := baseState(t)
	if err := s.Apply(&Edit{Has: HasStageFile, StageFile: 5}); err != nil {
		t.Fatal(err)
	}
	var ce *base.CorruptionError
	if err := s.Apply(&Edit{Has: HasStageFile, StageFile: 6}); !errors.As(err, &ce) {
		t.Fatalf("second stage mark: %v, want corruption", err)
	}
	if err := s.Apply(&Edit{Has: HasStageFile, StageFile: NoFile}); err != nil {
		t.Fatalf("clear stage: %v", err)
	}
}

func TestFileOf(t *testing.T) {
	s := baseState(t)
	cases := []struct {
		addr uint64
		file FileID
		ok   bool
	}{{0, 1, true}, {99, 1, true}, {100, 2, true}, {199, 2, true}, {200, 0, false}, {299, 0, false}, {300, 3, true}, {399, 3, true}, {400, 0, false}, {1 << 63, 0, false}}
	for _, tc := range cases {
		if f, ok := s.FileOf(tc.addr); f != tc.file || ok != tc.ok {
			t.Errorf("FileOf(%d) = %d, %v; want %d, %v", tc.addr, f, ok, tc.file, tc.ok)
		}
	}
	if f, ok := NewState().FileOf(5); ok || f != NoFile {
		t.Errorf("empty FileOf = %d, %v", f, ok)
	}
	if got := s.RangesOf(2); len(got) != 1 || got[0] != (Range{Lo: 100, Hi: 200, File: 2}) {
		t.Errorf("RangesOf(2) = %v", got)
	}
	if got := s.RangesOf(4); got != nil {
		t.Errorf("RangesOf(4) = %v", got)
	}
}

// TestCloneIndependent checks that a clone shares no mutable memory.
func TestCloneIndependent(t *testing.T) {
	s := baseState(t)
	c := s.Clone()
	before := snapBytes(s)
	if err := c.Apply(&Edit{RemoveRanges: []Range{{Lo: 0, Hi: 100, File: 1}}, RemovePages: []uint64{1},
		AddRanges: []Range{{Lo: 500, Hi: 600, File: 1}}, FileStats: []FileMeta{{ID: 2}}, DeletedFiles: []FileID{4}}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapBytes(s), before) {
		t.Fatal("changing a clone changed the original")
	}
	checkIndexes(t, s)
	checkIndexes(t, c)
	z := (&State{}).Clone()
	if err := z.Apply(&Edit{Has: HasNextPID, NextPID: 2, SetPages: []PageEntry{{PID: 1}}}); err == nil {
		t.Fatal("page with addr 0 >= NextAddr 0 accepted")
	}
	if err := z.Apply(&Edit{Has: HasNextPID | HasNextAddr, NextPID: 2, NextAddr: 1, SetPages: []PageEntry{{PID: 1}}}); err != nil {
		t.Fatalf("apply to a cloned zero State: %v", err)
	}
}

// TestApplyBlobRanges: a range of blob addresses is bounded by the next
// file id's blob block, not by NextAddr, and maps like any range (a GC
// rewrite moves it to another file).
func TestApplyBlobRanges(t *testing.T) {
	s := baseState(t) // NextFileID 10, NextAddr 1000
	ok := &Edit{AddRanges: []Range{{Lo: BlobAddr(3, 0), Hi: BlobAddr(3, 5), File: 3}}}
	if err := s.Apply(ok); err != nil {
		t.Fatalf("blob range of file 3: %v", err)
	}
	if id, found := s.FileOf(BlobAddr(3, 4)); !found || id != 3 {
		t.Fatalf("FileOf(blob 3/4) = %d, %v", id, found)
	}
	if _, found := s.FileOf(BlobAddr(3, 5)); found {
		t.Fatal("FileOf past the blob range found a file")
	}
	for _, bad := range []Range{
		{Lo: BlobAddr(10, 0), Hi: BlobAddr(10, 1), File: 3}, // the next file id's block
		{Lo: BlobAddr(3, 2), Hi: BlobAddr(3, 9), File: 1},   // overlaps
		{Lo: 900, Hi: BlobAddr(0, 1), File: 1},              // a frame range running into blobs
	} {
		if err := s.Apply(&Edit{AddRanges: []Range{bad}}); err == nil {
			t.Fatalf("range [%#x,%#x) applied", bad.Lo, bad.Hi)
		}
	}
	// Moved by a rewrite.
	mv := &Edit{RemoveRanges: []Range{{Lo: BlobAddr(3, 0), Hi: BlobAddr(3, 5), File: 3}},
		AddRanges: []Range{{Lo: BlobAddr(3, 0), Hi: BlobAddr(3, 5), File: 2}}}
	if err := s.Apply(mv); err != nil {
		t.Fatal(err)
	}
	if id, _ := s.FileOf(BlobAddr(3, 0)); id != 2 {
		t.Fatalf("moved blob range maps to file %d", id)
	}
	checkIndexes(t, s)
}
