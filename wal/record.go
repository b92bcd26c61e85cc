package wal

import (
	"strconv"

	"github.com/bwkv/bwkv/internal/base"
)

// LSN is a log sequence number: the offset of a record's first byte in the
// global log stream. The stream is contiguous across segments (a segment is
// named by the LSN of its first byte and the next one starts where it ends),
// so LSNs order records and measure log bytes. It is base.LSN, shared with
// the manifest and the root.
type LSN = base.LSN

// TxID identifies the transaction that wrote a record (base.TxID).
type TxID = base.TxID

// Type is the kind of a log record.
type Type uint8

// The record types. The numeric values are part of the on-disk format.
const (
	// Begin opens a transaction.
	Begin Type = iota + 1
	// Put inserts a key that had no value: key and new value, no old value.
	Put
	// Update replaces a value: key, the full old value and the new value.
	Update
	// Delete removes a key: key and the full old value, or no old value
	// (HasOld false) when the key was missing.
	Delete
	// CLR is a compensation log record written by undo: key, the value to
	// restore (or Tombstone when the key must read as absent again) and
	// UndoNext, the LSN of the next record of the transaction to undo.
	CLR
	// Commit commits a transaction.
	Commit
	// End closes a transaction whose rollback is complete.
	End
	// Image is a before-image: the old value of a write logged without it
	// (Update or Delete with OldDeferred), for undo. Key, the old value in
	// Value, and Of, the LSN of the write it belongs to. The engine logs
	// one at a cut for every write of a transaction still open there, so
	// a write that a checkpoint can hold before its transaction ends
	// always has its old value in the log (docs/crash-safety.md). It is
	// not part of its transaction's chain: PrevLSN and Seq are zero.
	Image
)

var typeNames = [...]string{
	Begin:  "begin",
	Put:    "put",
	Update: "update",
	Delete: "delete",
	CLR:    "clr",
	Commit: "commit",
	End:    "end",
	Image:  "image",
}

// Valid reports whether t is one of the defined record types.
func (t Type) Valid() bool { return t >= Begin && t <= Image }

// String returns the type's lowercase name.
func (t Type) String() string {
	if t.Valid() {
		return typeNames[t]
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// hasKey reports whether records of type t carry a key.
func (t Type) hasKey() bool { return t >= Put && t <= CLR || t == Image }

// Record is one log record. Which fields are encoded depends on Type:
//
//	Begin, Commit, End  TxID, Seq, PrevLSN only
//	Put                 Key, Value
//	Update              Key, OldValue unless OldDeferred, Value (HasOld is
//	                    true unless OldDeferred)
//	Delete              Key, OldValue if HasOld (never with OldDeferred)
//	CLR                 Key, Value unless Tombstone, UndoNext
//	Image               Key, Value (the old value), Of
//
// Fields that do not belong to the type are ignored by the encoder and zero
// after decoding. A Record returned by Decode or passed to a Replay callback
// aliases the bytes it was decoded from.
type Record struct {
	Type    Type
	TxID    TxID
	Seq     uint32 // the write's sequence number inside its transaction
	PrevLSN LSN    // the transaction's previous record

	Key      []byte
	Value    []byte // new value (Put, Update) or the value a CLR restores
	OldValue []byte // full old value (Update, Delete with HasOld)

	// HasOld is false for an absent old value (a delete of a missing key);
	// it is implied for Update unless OldDeferred and never set for Put.
	HasOld bool
	// OldDeferred marks an Update or Delete of a key that had a value,
	// logged without that value: an Image record carries it if undo can
	// need it.
	OldDeferred bool
	// Tombstone marks a CLR that restores absence instead of a value.
	Tombstone bool
	// UndoNext is, in a CLR, the LSN of the next record to undo.
	UndoNext LSN
	// Of is, in an Image, the LSN of the write whose old value it holds.
	Of LSN
}
