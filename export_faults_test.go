package bwkv

// SetMaxValueSizeForTest changes the value limit of an open DB without
// resizing its log, as a database whose manifest predates the stored
// MaxValueSize may find itself: values may exceed what one log segment
// holds.
func SetMaxValueSizeForTest(db *DB, n int) { db.opts.MaxValueSize = n }
