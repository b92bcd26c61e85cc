// Package mvcc holds bwkv's timestamps, transaction status, visibility
// rule, snapshot registry, watermark and lock waits.
//
// Internal to bwkv; no API stability promise.
//
// One atomic oracle ts serves txids (= start_ts of a txn), snapshot start
// timestamps (ts.Load()) and commit timestamps (ts.Add(1), drawn and
// published in one step under the txn's status lock).
//
// Visibility: a version by T is visible to reader R iff T = R, or T is
// retired (T < Low: committed before every live reader began, or aborted
// and masked by its CLRs, which every live reader's page loads include), or
// T committed with commit_ts <= R.start. A reader that meets a committing
// txn takes that txn's status lock, so it waits only for the draw-and-publish
// step, never for an fsync: if the draw has not happened yet it will happen
// after R sampled its start, so commit_ts > R.start (INV-T1).
//
// Retirement runs in txid order from the head of the begin queue. A
// committed txn retires when commit_ts <= W (every reader's start is at
// least W, so it sees the txn; the newest commit retires without waiting
// for the oracle to move again); an aborted one when its
// compensations are installed, its end record is durable and the timestamp
// drawn after the last compensation is <= W. (Consolidation does not wait
// for that: once the compensations are installed, Manager.RolledBack lets
// it drop the txn's versions with their CLRs, which no reader sees.)
// W = min(ts at the scan's start,
// every registered start). A registrant stores a lower bound of its start
// (ts.Load()) in its slot before it samples its start, so a scan that misses
// the slot began before the sample, and W <= the scan's first ts <= start.
//
// Once sampled, the start replaces the bound in the slot (Settle; until
// then the slot is marked provisional). Consolidation reads the settled
// starts to keep, per key, only the newest version at or below each of
// them (Manager.Readers, node.Retention); for a provisional slot, and for
// a reader registering during the read, it keeps every committed version
// above the bound instead, so a reader it cannot see yet loses nothing.
//
// The registry is sharded: slots are padded to cache lines and claimed by
// CAS at a random shard, so NewSnapshot/Close are O(1), allocation-free and
// contention-free across cores; the watermark scan touches every slot but
// runs off the hot path (amortized over many commits and in the
// background).
//
// Lock waits: a writer that meets another txn's uncommitted version of its
// key (WriteCheck: CheckWait) releases the page lock and waits for that
// txn to end (WaitFor), then checks again: after a rollback the version is
// skipped and the write goes on; after a commit the check reports the
// conflict (first committer wins). Each txn has a done channel, made by its
// first waiter under its status lock and closed when the txn reaches a
// final state, so registering a wait is O(1), takes no global lock, and a
// txn's end wakes exactly its own waiters. Each waiter publishes one
// wait-for edge; a wait that would close a cycle fails at once (WaitFor's
// comment proves that of two txns closing a cycle concurrently at least
// one sees it).
package mvcc
