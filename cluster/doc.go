// Package cluster replicates a bwkv database under hashicorp/raft.
//
// bwkv plays both roles raft needs from storage: Store is the raft log and
// stable store (a drop-in replacement for raft-boltdb), and FSM is the
// replicated state machine. Node wires them with raft into a member of a
// cluster, with linearizable reads and writes on the leader.
//
// # Writes
//
// A Batch (puts, deletes, and checks on a key's value or version) is one
// raft log entry. Each node applies it in one bwkv transaction that also
// records the entry's index, so a restarted node skips what it already
// holds. Checks are evaluated at apply time, identically on every node;
// a failed check applies nothing. A key's version is the raft index of the
// batch that last wrote it.
//
// # Reads
//
// Node.Get is linearizable (a read index confirmed by a quorum heartbeat,
// served once the state machine has applied it). Node.StaleGet reads the
// local state machine and may lag. See docs/cluster.md for the guarantees,
// failure modes and sizing.
//
// # Durability
//
// The log store commits with DurabilitySync (raft's safety needs every
// acknowledged entry on disk). The state machine may run with
// DurabilityRelaxed: a crash loses only a tail raft replays from its log.
// FSM snapshots sync the state machine before raft compacts its log past
// them, which is the one point where the log stops covering it.
//
// # Snapshots
//
// A raft snapshot is a bwkv backup stream (Snapshot.WriteTo) taken from an
// O(1) bwkv snapshot; installing one restores it with bwkv.Restore into a
// fresh directory and swaps it in atomically (see snapshot.go).
//
// # Concurrency and memory
//
// Node, FSM and Store are safe for concurrent use. Values they return
// belong to the caller; a Batch keeps references to the slices given to it
// until Node.Update returns.
package cluster
