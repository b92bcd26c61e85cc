// Package checkpoint is bwkv's checkpointer: the worker that decides when
// to cut (Checkpointer) and the run that writes the sealed generation's
// reachable frames to a data file and publishes them in the manifest
// (Run; docs/crash-safety.md).
//
// Internal to bwkv; no API stability promise.
//
// # The worker (checkpointer.go)
//
// A Checkpointer owns one goroutine (Run) and its mailbox: Kick (the hot
// generation passed CheckpointBytes, or the cache's pressure), Checkpoint
// (DB.Checkpoint: cut now, reply after the publish), a retry timer (1 s
// after a failed attempt; LoopEnv.GCRetry after a GC round that left
// work) and the idle settler's ticker (LoopEnv.Settle). Each wake-up runs
// Attempt, a pending sealed generation first, then the GC round
// (LoopEnv.CollectGarbage), in that order on that goroutine, so no other
// manifest commit interleaves with a round. It keeps the checkpoint
// counters (Stats) and the published broadcast channel.
//
// It is also the writers' throttle (Throttle, before any lock): a writer
// waits while the hot generation holds twice what makes it due, 2x
// CheckpointBytes of frame bytes or of log (a publish or a GC round runs,
// or the cut asked for at 1x has not happened yet: the writer asks for it
// again), or while the cache is over its hard limit
// (cache.Cache.MustWait); at most 100 x 100 ms, counted as a stall. The
// fast path reads concrete fields and makes one indirect call (the log
// head).
// The engine's side (the cut, the publish with its transaction and
// manifest work, the GC, the settler, degrading) is reached through
// LoopEnv, as the cache reaches it through cache.Env.
//
// # What is written
//
// For each PID in the sealed generation's exact dirty set, the page's
// sealed state (see below) is walked newest to oldest; the frames above the
// last published address are emitted with their link to the next-older
// frame (which may be durable in an older file). Frames superseded before
// the cut are no longer reachable from any sealed state and are never
// written (Stats counts them as skipped). A page removed by a merge is
// removed from the page table. All frames go into one data file in
// ascending address order.
//
// With Env.BlobThreshold, leaf entries whose values reach it are written
// as references to blob frames (blobs.go): a version whose blob the page's
// durable chain already references is referenced again; others get a new
// blob frame, owned by the page, at an address derived from the file id
// (manifest.BlobAddr), written after the page frames in the same file.
//
// # INV-C2 and its proof
//
// Choice: keep the sealed states discoverable until publish (generation
// package: the first post-cut touch of a page dirtied in the sealed
// generation pins its pre-change state before publishing the change).
//
// Claim: for every PID p in the sealed dirty set, the state S the
// checkpointer uses is p's state at the cut. Proof: the checkpointer loads
// p's current state C, then looks up the pin. (a) If p was not changed
// after the cut when C was loaded, C is the state at the cut; a pin, if it
// appeared since, was stored from that same state (the pin is the state
// the first post-cut change replaced). (b) If p was changed after the cut
// before the load, the first such change stored the pin before it
// published anything (same goroutine, sequentially consistent atomics), so
// the lookup after the load finds it. Every post-cut action holds the gate,
// and Cut ran under the gate's write side, so no action straddles the cut
// and the state at the cut contains exactly the frames with addresses <=
// SnapAddr that the page reached then. Consolidations, splits and merges
// after the cut only replace states; the states they replaced stay in the
// pin map until Publish drops the generation, so they cannot hide a sealed
// frame. New pages created after the cut are not in the sealed set; a split
// whose separator reaches the parent only after the cut leaves a half split
// on disk, which traversal follows through the sibling link and Check
// accepts.
//
// # Publish order (data first, metadata last)
//
//  1. note the first LSN of every transaction whose commit or end record may
//     not be durable yet, then fsync the log through its head (a failure here
//     degrades the DB: a failed fsync is never retried and trusted);
//  2. commit the new data file's id to the manifest (NextFileID), create it;
//  3. write the frames and the footer, fsync the file and the directory;
//  4. one manifest commit: page entries and removals, the address range ->
//     file, file stats (with Env.Ledger: the live bytes of the files whose
//     frames the publish made junk, docs/crash-safety.md), frontier, analysisStart,
//     counters;
//  5. mark the frames durable (generation.Publish);
//  6. recycle log segments wholly below analysisStart.
//
// A failure in 2–4 abandons the attempt: the sealed generation stays
// sealed and the next attempt rewrites it into a new file (the abandoned
// file's id is at or above nothing the manifest names, so Open deletes it).
// A failed fsync in 3 (wrapping pool.ErrSync) or in a manifest commit
// (manifest.ErrFailed) is reported like the log's in 1: the caller
// degrades the DB rather than retrying an fsync whose outcome is unknown.
package checkpoint
