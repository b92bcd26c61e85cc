package base

// Identity types shared by the layers, so that a value crossing a package
// boundary keeps its meaning (a PID cannot be passed where an address is
// expected) without a conversion. Packages that owned one of them before
// keep their name as an alias: wal.LSN and wal.TxID, manifest.FileID,
// pagetable.PID.
type (
	// PID is a page ID: the index of a page's slot in the mapping table.
	// 0 is never a page.
	PID uint64
	// Addr is a logical address of a durable frame; the manifest's ranges
	// map it to the data file that holds it. 0 is never a frame.
	Addr uint64
	// LSN is a log sequence number: a byte position in the write-ahead
	// log's address space.
	LSN uint64
	// TxID is a transaction ID, drawn from the oracle's clock.
	TxID uint64
	// FileID names a data file; IDs are never reused and 0 is never a
	// file.
	FileID uint64
)
