package bwkv

import "time"

// EventListener receives the engine's background events, for logging and
// metrics. Every field is optional (nil: not called). The callbacks run
// synchronously on the goroutine that did the work (the checkpointer, the
// evictor, a writer for the stalls, Open for recovery): they must return
// quickly, and must not call DB methods that wait for background work
// (Checkpoint, Close), which would wait for the callback itself. They may
// run concurrently with each other.
type EventListener struct {
	// CheckpointBegin runs when a checkpoint starts writing a sealed
	// generation; CheckpointEnd when it published or failed.
	CheckpointBegin func(CheckpointBeginInfo)
	CheckpointEnd   func(CheckpointEndInfo)
	// GCRound runs after each data-file GC round.
	GCRound func(GCRoundInfo)
	// BackgroundError runs for each failure of background work (the
	// failures Stats.BackgroundErrors counts), including the log failure
	// that degrades the DB to read-only.
	BackgroundError func(error)
	// StallBegin runs when a writer starts waiting for a lagging
	// checkpointer (backpressure), StallEnd when it goes on.
	StallBegin func()
	StallEnd   func(StallInfo)
	// RecoveryDone runs once Open's recovery finished, before Open
	// returns.
	RecoveryDone func(RecoveryStats)
}

// CheckpointBeginInfo describes a checkpoint that starts.
type CheckpointBeginInfo struct {
	// DirtyBytes is the frame bytes the sealed generation installed.
	DirtyBytes int64
}

// CheckpointEndInfo describes a checkpoint that ended.
type CheckpointEndInfo struct {
	// Bytes written to the data file and frames written (0 on failure).
	Bytes    int64
	Frames   int64
	Duration time.Duration
	// Err is why the checkpoint failed (nil: published).
	Err error
}

// GCRoundInfo describes one data-file GC round.
type GCRoundInfo struct {
	Duration time.Duration
	// More reports that the round left work for another one.
	More bool
	Err  error
}

// StallInfo describes a writer's backpressure wait.
type StallInfo struct {
	Duration time.Duration
}

// backgroundError counts a background failure and reports it.
func (db *DB) backgroundError(err error) {
	db.stats.bgErrors.Add(1)
	if l := db.opts.EventListener; l != nil && l.BackgroundError != nil {
		l.BackgroundError(err)
	}
}

// events returns the listener, or a zero one (no callbacks).
func (db *DB) events() *EventListener {
	if l := db.opts.EventListener; l != nil {
		return l
	}
	return &noEvents
}

var noEvents EventListener
