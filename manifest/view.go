package manifest

// Point reads of the durable state, for the checkpointer and the GC: each
// takes the state's read lock for one lookup, so a publish or a GC round
// costs what it looks up, not a copy of every page (State is
// O(pages + files)). Safe to call concurrently with Commit; a caller that
// needs several reads to agree must be the only committer meanwhile (the
// engine runs every commit in its one checkpointer goroutine).

// Page returns the address of page pid's newest durable frame. O(1).
func (m *Manifest) Page(pid uint64) (uint64, bool) {
	m.stateMu.RLock()
	defer m.stateMu.RUnlock()
	a, ok := m.state.Pages[pid]
	return a, ok
}

// File returns data file id's accounting, if it is live. O(1).
func (m *Manifest) File(id FileID) (FileMeta, bool) {
	m.stateMu.RLock()
	defer m.stateMu.RUnlock()
	f, ok := m.state.Files[id]
	return f, ok
}

// RangesOf returns the address ranges naming file id, sorted by Lo. The
// caller owns the slice. O(ranges).
func (m *Manifest) RangesOf(id FileID) []Range {
	m.stateMu.RLock()
	defer m.stateMu.RUnlock()
	return m.state.RangesOf(id)
}

// Counters returns the next data-file id and the recorded format version.
// O(1).
func (m *Manifest) Counters() (nextFile FileID, formatVersion uint64) {
	m.stateMu.RLock()
	defer m.stateMu.RUnlock()
	return m.state.NextFileID, m.state.FormatVersion
}

// Page returns the address of page pid's newest durable frame (the same
// lookup as Manifest.Page, on a State).
func (s *State) Page(pid uint64) (uint64, bool) {
	a, ok := s.Pages[pid]
	return a, ok
}

// File returns data file id's accounting, if it is live.
func (s *State) File(id FileID) (FileMeta, bool) {
	f, ok := s.Files[id]
	return f, ok
}
