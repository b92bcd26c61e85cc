// Package gc is bwkv's data-file garbage collector (docs/crash-safety.md): junk
// accounting, victim choice, the crash-safe rewrite and file deletion.
//
// Internal to bwkv; no API stability promise.
//
// # Junk accounting, decided at the event
//
// Every data file carries total and live frame bytes in the manifest
// (FileMeta). A frame becomes junk when a durable newer state of its page
// no longer reaches it. The Ledger keeps, per page resident in memory, the
// page's durable chain (address and encoded size of each frame from the
// page-table head down to the base); the checkpointer fills it with what
// it writes and the page loader with what it reads. When a checkpoint
// publishes a page, the page's new durable chain is the frames it writes
// followed by the old chain from the newest durable frame the state still
// reaches (Change.Keep): a new base makes the whole old chain junk, new
// deltas on top make nothing junk, a removed page makes its whole chain
// junk. The junk is attributed to files through the manifest's address
// map at the time of the commit, and the files' new live bytes go into
// the checkpoint's own manifest edit (FileStats): accounting and publish
// are one atomic commit. The work is O(frames written + frames made junk)
// per dirty page, in the checkpointer; nothing runs per write. A stored
// chain is trusted only when its head is the head the manifest holds;
// otherwise the chain is read from disk.
//
// Accounting only chooses victims; it is never trusted to delete data.
// Live bytes are clamped at zero, and a page whose old chain cannot be
// read contributes no junk.
//
// # Blobs
//
// A chain's extents list the blob frames each frame references (Extent.Blobs,
// docs/formats.md). A blob belongs to the page named in its header and is
// referenced by no other page, so at a publish the blobs of the frames that
// became junk are junk too, unless the page's new chain references them
// again (a consolidated base reuses the blobs of the versions it keeps); a
// removed page's blobs are all junk.
//
// # Liveness, decided at the rewrite
//
// A victim's frame is live iff its page has a head in the manifest's page
// table and the chain from that head, following links, reaches the frame;
// a victim's blob frame, iff a frame of that chain references it.
// Every disk read of a page starts at that head (the page table is
// initialised from it at Open, and a page whose head changes is in
// memory), so a frame no chain reaches is never read again. A page whose
// chain cannot be read keeps every frame (copying junk is harmless). The
// frame's page comes from the victim's relocation table (checksummed as a
// whole), so deciding liveness reads no frame; only the live frames are
// read, verified, and copied. (A version 1 data file records no pages in
// its table: its frames' headers are read instead.)
//
// # Victims
//
// Choose takes, in ascending live ratio, files with nothing live, files
// below Policy.LiveRatio, and, while the data files' total bytes exceed
// Policy.SpaceAmp times their live bytes, the least-live files below
// MaxVictimRatio, within a per-round byte budget. A round run while
// writes go on (Worker.Collect without settle) chooses by Policy.Busy:
// the ratio over busyRatioDiv, busySlack times the amplification's
// slack; a settling round (an idle database, DB.Checkpoint) by the
// policy itself, and so does the retry that resumes a settling round's
// leftover work while nothing new is published. Batches groups victims
// so that one rewrite copies at most about Policy.FileBytes of live
// data.
//
// # The rewrite protocol (crash safety)
//
//  1. Stage: one commit raises NextFileID past the new id and sets the
//     stage mark on it (failpoint gc_rewrite_after_stage_marker). From
//     here a crash leaves a staged, unregistered file (or none): Open
//     deletes every data file the manifest does not register, and the
//     next round clears the mark.
//  2. Write the live frames with their logical addresses (frames are
//     immutable, so they are copied as they are, but for the chains
//     consolidated, below), fsync the file, fsync the directory
//     (gc_rewrite_after_data_dir_sync).
//  3. One commit registers the new file (clearing the mark), remaps the
//     victims' address ranges to it and retires the victims as pending
//     deletes (gc_rewrite_before_meta_commit, gc_rewrite_after_meta_commit).
//     Before it, readers resolve every address to the victims, which are
//     intact; after it, to the new file, which is durable. A crash on
//     either side of the commit leaves one consistent map.
//  4. Delete: once no reader holds a victim (reference-counted handles in
//     the engine's cache), unlink it (gc_delete_obsolete), fsync the
//     directory and commit DeletedFiles. A crash before that commit
//     leaves pending deletes, which Open completes and the next round
//     records; a reader that resolved an address before step 3 and finds
//     the victim gone re-reads the map and retries.
//
// A batch with nothing live skips steps 1-2: one commit removes the
// victims' ranges and retires them, then step 4.
//
// # Consolidation
//
// A live page whose durable chain, from its newest frame in the batch's
// victims (the top) down to its base, holds two frames or more is not
// copied as it is: the rewrite writes, at the top's address, one base
// frame merging that part of the chain (consolidate.go), and the frames
// below the top are junk: victim frames are not copied, frames in other
// files are charged to them in the switch commit (FileStats). The address
// is the top's because frames above it, in other files or in memory, link
// to it, and checkpoints link new frames to the durable head, never below
// it. One reader starts below the head: a stub leaf reads its chain from
// its base's address and replays its own chain, which holds the deltas
// published since it was made; the top stays at or below that address
// (Env.LoadRoot). Such addresses only move up between publishes, and a
// round runs between two, so the engine's answer holds for the round.
// The victims' accounting is read again before each batch: an earlier
// batch of the round may have charged junk to them. The base is the chain on its base as the page loader rebuilds it,
// consolidated with a retention that drops nothing (node.Page.Collect), so
// it holds every version, CLRs and tombstones included: pruning would have
// to see the frames above the top (a CLR there masks versions below).
// Blob references are kept as they are (the values are not read), so no
// blob changes liveness. A chain that cannot be read or merged is copied
// as it is; the bases one batch holds before the write are bounded
// (mergeBytes). The base takes the engine's codec (Env.Compressor).
//
// A consolidation keeps the head of a chain but shortens it, so the
// Ledger's rule "a stored chain with the manifest's head is current" needs
// the epoch (Ledger.Epoch): the commit is bracketed by Ledger.rewriting and
// Ledger.Rewritten, which stores the consolidated chains of resident
// pages. A page load samples the epoch first: one whose read crossed the
// commit is not recorded (Loaded), and one that failed after it (it
// followed an old top delta's link to a frame now gone) reads the chain
// again from its head (Moved). A resident stub's node.Stub.DiskLen still
// counts the dropped deltas: it only steers when a stub is loaded in full
// or consolidated, so the over-count costs at most an early load.
//
// # The round driver
//
// Worker (worker.go) drives the Collector: a round is due after each
// publish (Worker.Published) and while the last one left work or failed.
// A round that collected leaves work while Choose still finds victims
// after it (its budget ended before one, or its consolidations charged
// junk to other files), so a database with no more publishes still goes
// on until the data files are within the round's targets (the settle
// brings them within SpaceAmp); each rewrite only removes
// frames, so this ends;
// Writers wait during a round as during a publish once the hot
// generation holds twice what makes a cut due (the checkpointer's
// throttle). A round runs
// in the engine's checkpointer goroutine right after a checkpoint attempt
// (checkpoint.Checkpointer calls Worker.Collect through its LoopEnv), so
// no other manifest commit interleaves with it and the state read at its
// start stays the durable state. A failed step returns an error and
// changes nothing that a crash at the same point would not: the Worker
// reports it (WorkerEnv.BackgroundError, logged) and a later round
// retries, except a failed fsync (WorkerEnv.Fatal), which degrades the DB
// and ends the rounds. The Worker reaches the engine only through
// WorkerEnv, the Collector through Env and Files.
package gc
