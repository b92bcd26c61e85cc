package failpoints

// The catalogue. A name used in code must be listed here and in All; a test
// checks both directions against the source tree.
const (
	WALAppend        = "wal_append"
	WALBeforeSync    = "wal_before_sync"
	WALAfterSync     = "wal_after_sync"
	WALRotate        = "wal_rotate"
	WALRecycle       = "wal_recycle"
	TxnCommitLogged  = "txn_commit_logged"
	TxnCommitDurable = "txn_commit_durable"
	TxnUndoCLR       = "txn_undo_clr"
	TxnAbortEnd      = "txn_abort_end"

	CheckpointCut           = "checkpoint_cut"
	CheckpointImages        = "checkpoint_images"
	CheckpointWALSync       = "checkpoint_wal_sync"
	CheckpointFileID        = "checkpoint_file_id"
	CheckpointDataWrite     = "checkpoint_data_write"
	CheckpointDataSync      = "checkpoint_data_sync"
	CheckpointDirSync       = "checkpoint_dir_sync"
	CheckpointManifestWrite = "checkpoint_manifest_commit"
	CheckpointMarkDurable   = "checkpoint_mark_durable"
	CheckpointRecycle       = "checkpoint_recycle"

	ManifestAppend = "manifest_append"
	ManifestRotate = "manifest_rotate"

	RecoveryRedo = "recovery_redo"
	RecoveryUndo = "recovery_undo"
	RecoveryEnd  = "recovery_end"

	// The data-file GC's rewrite (docs/crash-safety.md): after the stage mark is
	// durable, after the new file and its directory entry are, just before
	// and just after the manifest commit that remaps the victims, and
	// before each unlink of a retired file.
	GCAfterStageMarker = "gc_rewrite_after_stage_marker"
	GCAfterDataDirSync = "gc_rewrite_after_data_dir_sync"
	GCBeforeMetaCommit = "gc_rewrite_before_meta_commit"
	GCAfterMetaCommit  = "gc_rewrite_after_meta_commit"
	GCDeleteObsolete   = "gc_delete_obsolete"
)

// All lists every failpoint name, for the crash matrix.
var All = []string{
	WALAppend, WALBeforeSync, WALAfterSync, WALRotate, WALRecycle,
	TxnCommitLogged, TxnCommitDurable, TxnUndoCLR, TxnAbortEnd,
	CheckpointCut, CheckpointImages, CheckpointWALSync, CheckpointFileID, CheckpointDataWrite,
	CheckpointDataSync, CheckpointDirSync, CheckpointManifestWrite,
	CheckpointMarkDurable, CheckpointRecycle,
	ManifestAppend, ManifestRotate,
	RecoveryRedo, RecoveryUndo, RecoveryEnd,
	GCAfterStageMarker, GCAfterDataDirSync, GCBeforeMetaCommit,
	GCAfterMetaCommit, GCDeleteObsolete,
}

// The mutant points: each guards one protocol step with Skip, so a crash
// test can prove it notices the step missing (prod_test.sh mutants arms
// each with return("skip") and requires the crash tests to fail). A test
// checks both directions against the source tree, as for All.
const (
	// The commit is acknowledged and made visible without waiting for
	// its log record to be durable.
	MutCommitNotDurable = "mutant_commit_not_durable"
	// A checkpoint publishes without syncing the log first (INV-C1).
	MutCheckpointNoWALSync = "mutant_checkpoint_no_wal_sync"
	// A checkpoint's manifest commit names a data file that was never
	// synced.
	MutCheckpointNoDataSync = "mutant_checkpoint_no_data_sync"
	// A checkpoint leaves one dirty page out of its data file and edit.
	MutCheckpointDropPage = "mutant_checkpoint_drop_page"
	// A superseded frame's junk is not recorded in the ledger.
	MutJunkNotRecorded = "mutant_junk_not_recorded"
	// The GC deletes its victims (durably) before the manifest remaps
	// them.
	MutGCDeleteBeforeRemap = "mutant_gc_delete_before_remap"
	// Recovery leaves the losers' writes in place.
	MutRecoveryNoUndo = "mutant_recovery_no_undo"
	// CLRs (a rollback's and recovery's) are written without their
	// undo-next pointer.
	MutCLRNoUndoNext = "mutant_clr_no_undo_next"
	// Log records are not bound to their LSN (their CRC leaves it out)
	// while retired segments are still reused: a reused segment's stale
	// records read as records again.
	MutWALUnboundRecords = "mutant_wal_unbound_records"
	// A cut logs no before-images: an open transaction's write that a
	// checkpoint holds has no old value in the log.
	MutCutNoImages = "mutant_cut_no_images"
	// A cut logs before-images only before its gate closes: a write made
	// between that pass and the gate has no old value in the log.
	MutCutNoGateImages = "mutant_cut_no_gate_images"
	// A carried base keeps no pending deltas: the checkpointer never
	// writes the absorbed deltas that were not durable yet, and the page's
	// head names the address of one of them.
	MutCarryUnwritten = "mutant_carry_unwritten"
)

// Mutants lists every mutant point, for prod_test.sh mutants.
var Mutants = []string{
	MutCommitNotDurable, MutCheckpointNoWALSync, MutCheckpointNoDataSync,
	MutCheckpointDropPage, MutJunkNotRecorded, MutGCDeleteBeforeRemap,
	MutRecoveryNoUndo, MutCLRNoUndoNext, MutWALUnboundRecords,
	MutCutNoImages, MutCutNoGateImages, MutCarryUnwritten,
}
