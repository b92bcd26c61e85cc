package manifest

import (
	"cmp"
	"slices"
	"sort"

	"github.com/bwkv/bwkv/internal/base"
)

// Apply validates e against s and, when it is valid, applies it; when it is
// not, s is unchanged and the error is a *base.CorruptionError (or wraps
// base.ErrVersion for a format version newer than FormatVersion).
//
// An edit is valid when, with "post" meaning the value after the edit's
// scalars:
//   - no counter (NextPID, NextAddr, NextFileID, Oracle, NextManifest,
//     Frontier, AnalysisStart, FormatVersion) moves backwards, and post
//     AnalysisStart <= post Frontier;
//   - FormatVersion is in [1, FormatVersion]; options are non-negative and
//     the codec name is at most 255 bytes;
//   - an added file is not NoFile, lies below post NextFileID and is not
//     registered or retired; for every FileMeta 0 <= Live <= Total;
//   - a removed range matches an existing range exactly; an added range is
//     non-empty, ends at or below post NextAddr (a range of blob addresses:
//     at or below BlobAddr(post NextFileID, 0)), names a file registered
//     after AddFiles, and overlaps neither another added range nor a range
//     that stays;
//   - a removed page exists and is not also set; a set page has
//     PID < post NextPID and Addr < post NextAddr;
//   - FileStats name registered files; a retired file (PendingDeletes) is
//     registered and no range names it after the edit; a deleted file
//     (DeletedFiles) is retired, before or by this edit;
//   - a staged file (StageFile) lies below post NextFileID, a new stage
//     mark replaces only NoFile, and the staged file is never registered:
//     the edit that adds it must clear the mark;
//   - no list names the same PID, range or file twice.
//
// Every rule is an invariant of every state Apply produces, so the
// Snapshot of a valid state always applies to NewState().
func (s *State) Apply(e *Edit) error {
	if err := s.check(e); err != nil {
		return err
	}
	s.mutate(e)
	return nil
}

// forward returns the post value of a counter, refusing to move it back.
func forward(e *Edit, f Field, name string, old, v uint64) (uint64, *base.CorruptionError) {
	if e.Has&f == 0 {
		return old, nil
	}
	if v < old {
		return old, corruptf("%s goes back from %d to %d", name, old, v)
	}
	return v, nil
}

func checkMeta(what string, f FileMeta) *base.CorruptionError {
	if f.Total < 0 || f.Live < 0 || f.Live > f.Total {
		return corruptf("%s file %d: bad accounting total %d live %d", what, f.ID, f.Total, f.Live)
	}
	return nil
}

// check validates e against s without changing s (see Apply): the
// edit's header, its counters, then every list it carries, each checked
// against s and against what the edit itself adds.
func (s *State) check(e *Edit) error {
	if err := checkHeader(e, s.FormatVersion); err != nil {
		return err
	}
	nextPID, nextAddr, nextFile, err := s.checkCounters(e)
	if err != nil {
		return err
	}
	added, err := s.checkAddFiles(e, nextFile)
	if err != nil {
		return err
	}
	isFile := func(id FileID) bool {
		_, a := s.Files[id]
		_, b := added[id]
		return a || b
	}
	if err := s.checkStage(e, nextFile, isFile); err != nil {
		return err
	}
	delta, cerr := s.checkRanges(e, nextAddr, FileID(nextFile), isFile)
	if cerr != nil {
		return cerr
	}
	if err := s.checkPages(e, nextPID, nextAddr); err != nil {
		return err
	}
	if err := checkFileStats(e, isFile); err != nil {
		return err
	}
	retired, err := s.checkRetire(e, isFile, delta)
	if err != nil {
		return err
	}
	return s.checkDeleted(e, retired)
}

// checkHeader validates e's presence flags, format version (against
// stored, the state's) and format options.
func checkHeader(e *Edit, stored uint64) error {
	if e.Has&^allFields != 0 {
		return corruptf("unknown presence flags %#x", uint32(e.Has&^allFields))
	}
	if e.Has&HasFormatVersion != 0 {
		switch v := e.FormatVersion; {
		case v > FormatVersion:
			return versionError("format", v, FormatVersion)
		case v == 0:
			return corruptf("format version 0")
		case v < stored:
			return corruptf("format version goes back from %d to %d", stored, v)
		}
	}
	if e.Has&HasOptions != 0 {
		o := &e.Options
		if o.PageSplitEntries < 0 || o.BlobThreshold < 0 || o.MaxKeySize < 0 || o.MaxValueSize < 0 || len(o.Compression) > maxCodecLen {
			return corruptf("bad format options %+v", *o)
		}
	}
	return nil
}

// checkCounters checks that every counter e sets moves forward and that
// the analysis start stays at or below the frontier; it returns the next
// PID, address and file id in force after e.
func (s *State) checkCounters(e *Edit) (nextPID, nextAddr, nextFile uint64, _ error) {
	var err *base.CorruptionError
	check := func(f Field, name string, old, v uint64) uint64 {
		if err != nil {
			return old
		}
		var post uint64
		post, err = forward(e, f, name, old, v)
		return post
	}
	nextPID = check(HasNextPID, "next pid", s.NextPID, e.NextPID)
	nextAddr = check(HasNextAddr, "next addr", s.NextAddr, e.NextAddr)
	nextFile = check(HasNextFileID, "next file id", uint64(s.NextFileID), uint64(e.NextFileID))
	check(HasOracle, "oracle", s.Oracle, e.Oracle)
	check(HasNextManifest, "next manifest", s.NextManifest, e.NextManifest)
	frontier := check(HasFrontier, "frontier", s.Frontier, e.Frontier)
	analysis := check(HasAnalysisStart, "analysis start", s.AnalysisStart, e.AnalysisStart)
	// LogSynced is not checked to move forward: an open that truncated a
	// damaged log (WALRecoveryTruncateDamaged) lowers it to where the kept
	// log ends.
	if err != nil {
		return 0, 0, 0, err
	}
	if analysis > frontier {
		return 0, 0, 0, corruptf("analysis start %d above frontier %d", analysis, frontier)
	}
	return nextPID, nextAddr, nextFile, nil
}

// checkAddFiles validates the files e registers and returns their ids.
func (s *State) checkAddFiles(e *Edit, nextFile uint64) (map[FileID]struct{}, error) {
	added := make(map[FileID]struct{}, len(e.AddFiles))
	for _, f := range e.AddFiles {
		_, reg := s.Files[f.ID]
		_, ret := s.PendingDeletes[f.ID]
		_, dup := added[f.ID]
		switch {
		case f.ID == NoFile:
			return nil, corruptf("add file 0")
		case uint64(f.ID) >= nextFile:
			return nil, corruptf("add file %d at or above next file id %d", f.ID, nextFile)
		case reg || ret:
			return nil, corruptf("add file %d: already registered or retired", f.ID)
		case dup:
			return nil, corruptf("add file %d twice", f.ID)
		}
		if err := checkMeta("add", f); err != nil {
			return nil, err
		}
		added[f.ID] = struct{}{}
	}
	return added, nil
}

// checkFileStats validates e's new accounting: once per registered file.
func checkFileStats(e *Edit, isFile func(FileID) bool) error {
	seen := make(map[FileID]struct{}, len(e.FileStats))
	for _, f := range e.FileStats {
		if !isFile(f.ID) {
			return corruptf("stats for file %d, which is not registered", f.ID)
		}
		if _, dup := seen[f.ID]; dup {
			return corruptf("stats for file %d twice", f.ID)
		}
		seen[f.ID] = struct{}{}
		if err := checkMeta("stats", f); err != nil {
			return err
		}
	}
	return nil
}

// checkRetire validates the files e retires (registered, once, named by
// no range once e's range changes, delta, apply) and returns them.
func (s *State) checkRetire(e *Edit, isFile func(FileID) bool, delta map[FileID]int) (map[FileID]struct{}, error) {
	retired := make(map[FileID]struct{}, len(e.PendingDeletes))
	for _, id := range e.PendingDeletes {
		if !isFile(id) {
			return nil, corruptf("retire file %d, which is not registered", id)
		}
		if _, dup := retired[id]; dup {
			return nil, corruptf("retire file %d twice", id)
		}
		if n := s.rangeCount[id] + delta[id]; n != 0 {
			return nil, corruptf("retire file %d still named by %d ranges", id, n)
		}
		retired[id] = struct{}{}
	}
	return retired, nil
}

// checkDeleted validates the files e reports deleted: each retired before
// or by e, once.
func (s *State) checkDeleted(e *Edit, retired map[FileID]struct{}) error {
	deleted := make(map[FileID]struct{}, len(e.DeletedFiles))
	for _, id := range e.DeletedFiles {
		_, p := s.PendingDeletes[id]
		_, q := retired[id]
		if !p && !q {
			return corruptf("deleted file %d was not retired", id)
		}
		if _, dup := deleted[id]; dup {
			return corruptf("deleted file %d twice", id)
		}
		deleted[id] = struct{}{}
	}
	return nil
}

// checkStage validates the stage mark. The staged file must never be
// registered: Open deletes a staged file, so a mark left on a registered
// file would delete live data.
func (s *State) checkStage(e *Edit, nextFile uint64, isFile func(FileID) bool) *base.CorruptionError {
	stage := s.StageFile
	if e.Has&HasStageFile != 0 {
		if v := e.StageFile; v != NoFile {
			switch {
			case s.StageFile != NoFile && s.StageFile != v:
				return corruptf("stage file %d while file %d is staged", v, s.StageFile)
			case uint64(v) >= nextFile:
				return corruptf("stage file %d at or above next file id %d", v, nextFile)
			}
		}
		stage = e.StageFile
	}
	if stage == NoFile {
		return nil
	}
	_, ret := s.PendingDeletes[stage]
	if isFile(stage) || ret {
		return corruptf("staged file %d is registered: the edit that adds it must clear the stage mark", stage)
	}
	return nil
}

// checkRanges validates RemoveRanges and AddRanges and returns, per file,
// the change in the number of ranges naming it.
func (s *State) checkRanges(e *Edit, nextAddr uint64, nextFile FileID, isFile func(FileID) bool) (map[FileID]int, *base.CorruptionError) {
	delta := make(map[FileID]int)
	removed := make(map[uint64]struct{}, len(e.RemoveRanges))
	for _, r := range e.RemoveRanges {
		i := sort.Search(len(s.ranges), func(i int) bool { return s.ranges[i].Lo >= r.Lo })
		if i == len(s.ranges) || s.ranges[i] != r {
			return nil, corruptf("remove range [%d,%d) -> file %d: no such range", r.Lo, r.Hi, r.File)
		}
		if _, dup := removed[r.Lo]; dup {
			return nil, corruptf("remove range [%d,%d) twice", r.Lo, r.Hi)
		}
		removed[r.Lo] = struct{}{}
		delta[r.File]--
	}
	add := sortedRanges(e.AddRanges)
	for i, r := range add {
		switch {
		case r.Lo >= r.Hi:
			return nil, corruptf("empty range [%d,%d)", r.Lo, r.Hi)
		case IsBlobAddr(r.Lo) && (nextFile > maxBlobFile || r.Hi > BlobAddr(nextFile, 0)):
			return nil, corruptf("blob range [%#x,%#x) ends past the blobs of next file id %d", r.Lo, r.Hi, nextFile)
		case !IsBlobAddr(r.Lo) && r.Hi > nextAddr:
			return nil, corruptf("range [%d,%d) ends past next addr %d", r.Lo, r.Hi, nextAddr)
		case !isFile(r.File):
			return nil, corruptf("range [%d,%d) names file %d, which is not registered", r.Lo, r.Hi, r.File)
		case i > 0 && add[i-1].Hi > r.Lo:
			return nil, corruptf("added ranges [%d,%d) and [%d,%d) overlap", add[i-1].Lo, add[i-1].Hi, r.Lo, r.Hi)
		}
		// Every existing range this loop visits overlaps r, so it must be
		// one the edit removes; the loop runs at most len(removed)+1 times.
		j := sort.Search(len(s.ranges), func(j int) bool { return s.ranges[j].Hi > r.Lo })
		for ; j < len(s.ranges) && s.ranges[j].Lo < r.Hi; j++ {
			if _, gone := removed[s.ranges[j].Lo]; !gone {
				o := s.ranges[j]
				return nil, corruptf("range [%d,%d) overlaps range [%d,%d) of file %d", r.Lo, r.Hi, o.Lo, o.Hi, o.File)
			}
		}
		delta[r.File]++
	}
	return delta, nil
}

// checkPages validates RemovePages and SetPages.
func (s *State) checkPages(e *Edit, nextPID, nextAddr uint64) *base.CorruptionError {
	removed := make(map[uint64]struct{}, len(e.RemovePages))
	for _, pid := range e.RemovePages {
		if _, ok := s.Pages[pid]; !ok {
			return corruptf("remove page %d, which has no entry", pid)
		}
		if _, dup := removed[pid]; dup {
			return corruptf("remove page %d twice", pid)
		}
		removed[pid] = struct{}{}
	}
	set := make(map[uint64]struct{}, len(e.SetPages))
	for _, p := range e.SetPages {
		switch {
		case p.PID >= nextPID:
			return corruptf("page %d at or above next pid %d", p.PID, nextPID)
		case p.Addr >= nextAddr:
			return corruptf("page %d at addr %d, at or above next addr %d", p.PID, p.Addr, nextAddr)
		}
		if _, dup := set[p.PID]; dup {
			return corruptf("set page %d twice", p.PID)
		}
		if _, gone := removed[p.PID]; gone {
			return corruptf("page %d both set and removed", p.PID)
		}
		set[p.PID] = struct{}{}
	}
	return nil
}

// sortedRanges returns rs sorted by Lo, copying only when needed.
func sortedRanges(rs []Range) []Range {
	less := func(a, b Range) int { return cmp.Compare(a.Lo, b.Lo) }
	if slices.IsSortedFunc(rs, less) {
		return rs
	}
	c := slices.Clone(rs)
	slices.SortFunc(c, less)
	return c
}

// mutate applies an edit check accepted. It cannot fail.
func (s *State) mutate(e *Edit) {
	s.initMaps()
	if e.Has&HasFormatVersion != 0 {
		s.FormatVersion = e.FormatVersion
	}
	if e.Has&HasOptions != 0 {
		s.Options = e.Options
	}
	if e.Has&HasNextPID != 0 {
		s.NextPID = e.NextPID
	}
	if e.Has&HasNextAddr != 0 {
		s.NextAddr = e.NextAddr
	}
	if e.Has&HasNextFileID != 0 {
		s.NextFileID = e.NextFileID
	}
	if e.Has&HasOracle != 0 {
		s.Oracle = e.Oracle
	}
	if e.Has&HasNextManifest != 0 {
		s.NextManifest = e.NextManifest
	}
	if e.Has&HasFrontier != 0 {
		s.Frontier = e.Frontier
	}
	if e.Has&HasAnalysisStart != 0 {
		s.AnalysisStart = e.AnalysisStart
	}
	if e.Has&HasStageFile != 0 {
		s.StageFile = e.StageFile
	}
	if e.Has&HasLogSynced != 0 {
		s.LogSynced = e.LogSynced
	}
	for _, f := range e.AddFiles {
		s.Files[f.ID] = f
	}
	if len(e.RemoveRanges) > 0 || len(e.AddRanges) > 0 {
		s.ranges = s.remapRanges(e.RemoveRanges, sortedRanges(e.AddRanges))
	}
	for _, pid := range e.RemovePages {
		delete(s.Pages, pid)
	}
	for _, p := range e.SetPages {
		s.Pages[p.PID] = p.Addr
	}
	for _, f := range e.FileStats {
		s.Files[f.ID] = f
	}
	for _, id := range e.PendingDeletes {
		delete(s.Files, id)
		s.PendingDeletes[id] = struct{}{}
	}
	for _, id := range e.DeletedFiles {
		delete(s.PendingDeletes, id)
	}
}

// remapRanges returns a new sorted slice: s.ranges without remove, merged
// with add (sorted). It never modifies s.ranges, which readers may share.
func (s *State) remapRanges(remove, add []Range) []Range {
	gone := make(map[uint64]struct{}, len(remove))
	for _, r := range remove {
		gone[r.Lo] = struct{}{}
		if s.rangeCount[r.File]--; s.rangeCount[r.File] == 0 {
			delete(s.rangeCount, r.File)
		}
	}
	for _, r := range add {
		s.rangeCount[r.File]++
	}
	out := make([]Range, 0, len(s.ranges)-len(remove)+len(add))
	i := 0
	for _, r := range s.ranges {
		if _, ok := gone[r.Lo]; ok {
			continue
		}
		for i < len(add) && add[i].Lo < r.Lo {
			out = append(out, add[i])
			i++
		}
		out = append(out, r)
	}
	return append(out, add[i:]...)
}
