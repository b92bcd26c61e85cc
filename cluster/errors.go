package cluster

import "errors"

var (
	// ErrKeyNotFound is returned by StableStore.Get and GetUint64 for a key
	// never set. Its message is exactly "not found" on purpose: hashicorp/raft
	// compares the message (not the value) to tell a fresh store from a
	// failing one, the convention raft-boltdb set, so a drop-in replacement
	// must keep it.
	ErrKeyNotFound = errors.New("not found")

	// ErrNotLeader is returned by Node.Update and Node.Get on a node that is
	// not the leader; the error's message names the leader when one is
	// known (see NotLeaderError).
	ErrNotLeader = errors.New("cluster: not the leader")

	// ErrClosed is returned by a Node or store after Close.
	ErrClosed = errors.New("cluster: closed")

	// ErrBadBatch is returned for a batch that cannot be applied as
	// written (no operations, an empty key, an unknown operation).
	ErrBadBatch = errors.New("cluster: bad batch")

	// ErrConditionFailed is returned by Node.Update when a conditional
	// operation's comparison failed at apply time; nothing of the batch was
	// applied (see ConditionError).
	ErrConditionFailed = errors.New("cluster: condition failed")
)
