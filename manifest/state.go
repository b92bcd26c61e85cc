package manifest

import (
	"cmp"
	"maps"
	"slices"
	"sort"
)

// State is the accumulated result of applying edits in order: what the
// manifest says is durable.
//
// A State is not safe for concurrent mutation; Apply is its only mutator.
// The exported fields are for reading: change them only through Apply,
// which keeps the private indexes (ranges, per-file range counts) in step.
// A State returned by Open or Manifest.State is a private copy that the
// caller owns.
type State struct {
	// FormatVersion is the recorded format version; 0 if never recorded.
	FormatVersion uint64
	// Options are the recorded format options; the zero value if never
	// recorded.
	Options FormatOptions

	NextPID      uint64
	NextAddr     uint64
	NextFileID   FileID
	Oracle       uint64
	NextManifest uint64

	Frontier      uint64
	AnalysisStart uint64
	// LogSynced is the log LSN the last checkpoint publish had fsynced
	// (Edit.LogSynced); 0 if never recorded.
	LogSynced uint64

	// StageFile is the data file a GC rewrite has staged, or NoFile.
	StageFile FileID

	// Pages maps PID -> logical address of the page's newest durable frame.
	Pages map[uint64]uint64
	// Files holds the live data files (not retired).
	Files map[FileID]FileMeta
	// PendingDeletes holds retired files whose deletion is not yet recorded
	// as done; Open must finish deleting them.
	PendingDeletes map[FileID]struct{}

	// ranges is sorted by Lo and non-overlapping. A slice is never modified
	// after it is stored here (Apply builds a new one), so views of it may be
	// shared with concurrent readers.
	ranges []Range
	// rangeCount counts the ranges naming each file, so that retiring a file
	// still named by a range is caught in O(1).
	rangeCount map[FileID]int
}

// NewState returns the state of an empty manifest: every counter at its
// start (NextFileID and NextManifest at 1, since 0 is never a file) and no
// pages, ranges or files.
func NewState() *State {
	return &State{
		NextFileID:     1,
		NextManifest:   1,
		Pages:          make(map[uint64]uint64),
		Files:          make(map[FileID]FileMeta),
		PendingDeletes: make(map[FileID]struct{}),
		rangeCount:     make(map[FileID]int),
	}
}

// Clone returns a deep copy of s that shares no mutable memory with it. It
// costs O(pages + files).
func (s *State) Clone() *State {
	c := *s
	c.Pages = maps.Clone(s.Pages)
	c.Files = maps.Clone(s.Files)
	c.PendingDeletes = maps.Clone(s.PendingDeletes)
	c.rangeCount = maps.Clone(s.rangeCount)
	c.initMaps() // a zero State has nil maps
	// c.ranges is shared: it is immutable once stored.
	return &c
}

// initMaps makes the maps of a zero State usable.
func (s *State) initMaps() {
	if s.Pages == nil {
		s.Pages = make(map[uint64]uint64)
	}
	if s.Files == nil {
		s.Files = make(map[FileID]FileMeta)
	}
	if s.PendingDeletes == nil {
		s.PendingDeletes = make(map[FileID]struct{})
	}
	if s.rangeCount == nil {
		s.rangeCount = make(map[FileID]int)
	}
}

// FileOf returns the data file holding the logical address addr, in
// O(log ranges).
func (s *State) FileOf(addr uint64) (FileID, bool) {
	return fileOf(s.ranges, addr)
}

// fileOf searches a sorted, non-overlapping range slice.
func fileOf(rs []Range, addr uint64) (FileID, bool) {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].Hi > addr })
	if i < len(rs) && rs[i].Lo <= addr {
		return rs[i].File, true
	}
	return NoFile, false
}

// FileList returns the registered files sorted by ID. The caller owns the
// returned slice.
func (s *State) FileList() []FileMeta {
	out := make([]FileMeta, 0, len(s.Files))
	for _, f := range s.Files {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b FileMeta) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Ranges returns the address ranges sorted by Lo. The caller owns the
// returned slice.
func (s *State) Ranges() []Range {
	return slices.Clone(s.ranges)
}

// RangesOf returns the ranges naming file id, sorted by Lo, in
// O(ranges); GC uses it to remap or drop a victim's ranges.
func (s *State) RangesOf(id FileID) []Range {
	if s.rangeCount[id] == 0 {
		return nil
	}
	out := make([]Range, 0, s.rangeCount[id])
	for _, r := range s.ranges {
		if r.File == id {
			out = append(out, r)
		}
	}
	return out
}

// Snapshot returns one edit that, applied to NewState(), yields a state
// equal to s. Pages and files are sorted, so equal states give equal
// snapshots.
func (s *State) Snapshot() *Edit {
	e := &Edit{
		Has: HasNextPID | HasNextAddr | HasNextFileID | HasOracle |
			HasNextManifest | HasFrontier | HasAnalysisStart | HasOptions,
		Options:       s.Options,
		NextPID:       s.NextPID,
		NextAddr:      s.NextAddr,
		NextFileID:    s.NextFileID,
		Oracle:        s.Oracle,
		NextManifest:  s.NextManifest,
		Frontier:      s.Frontier,
		AnalysisStart: s.AnalysisStart,
	}
	if s.FormatVersion != 0 {
		e.Has |= HasFormatVersion
		e.FormatVersion = s.FormatVersion
	}
	if s.StageFile != NoFile {
		e.Has |= HasStageFile
		e.StageFile = s.StageFile
	}
	if s.LogSynced != 0 {
		e.Has |= HasLogSynced
		e.LogSynced = s.LogSynced
	}
	if len(s.Pages) > 0 {
		e.SetPages = make([]PageEntry, 0, len(s.Pages))
		for pid, addr := range s.Pages {
			e.SetPages = append(e.SetPages, PageEntry{PID: pid, Addr: addr})
		}
		slices.SortFunc(e.SetPages, func(a, b PageEntry) int { return cmp.Compare(a.PID, b.PID) })
	}
	if len(s.ranges) > 0 {
		e.AddRanges = slices.Clone(s.ranges)
	}
	// Retired files are registered (their accounting no longer matters)
	// and retired again in the same edit.
	for _, f := range s.Files {
		e.AddFiles = append(e.AddFiles, f)
	}
	for id := range s.PendingDeletes {
		e.AddFiles = append(e.AddFiles, FileMeta{ID: id})
		e.PendingDeletes = append(e.PendingDeletes, id)
	}
	slices.SortFunc(e.AddFiles, func(a, b FileMeta) int { return cmp.Compare(a.ID, b.ID) })
	slices.Sort(e.PendingDeletes)
	return e
}
