package vfs

import "fmt"

// OpKind names a mutating file-system operation: the operations MemFS
// reports to its hook and Injector counts and fails.
type OpKind uint8

// The mutating operations. Write covers both File.Write and File.WriteAt;
// Sync is File.Sync; SyncDir is FS.SyncDir.
const (
	OpCreate OpKind = iota + 1
	OpWrite
	OpSync
	OpTruncate
	OpRename
	OpRemove
	OpMkdir
	OpSyncDir
)

var opNames = [...]string{
	OpCreate:   "create",
	OpWrite:    "write",
	OpSync:     "sync",
	OpTruncate: "truncate",
	OpRename:   "rename",
	OpRemove:   "remove",
	OpMkdir:    "mkdir",
	OpSyncDir:  "syncdir",
}

// String returns the operation's lowercase name ("write", "syncdir").
func (k OpKind) String() string {
	if int(k) < len(opNames) && opNames[k] != "" {
		return opNames[k]
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// Op describes one mutating operation.
type Op struct {
	// Kind is what the operation does.
	Kind OpKind
	// Path is the file or directory operated on; for a File method, the
	// name the file was opened with; for a rename, the old name.
	Path string
	// To is the new name of a rename, empty otherwise.
	To string
	// Index is the operation's 1-based position in its counter's sequence.
	Index int64
}

// String formats the operation for test failures, e.g. "#7 write /db/x".
func (o Op) String() string {
	if o.Kind == OpRename {
		return fmt.Sprintf("#%d %s %s -> %s", o.Index, o.Kind, o.Path, o.To)
	}
	return fmt.Sprintf("#%d %s %s", o.Index, o.Kind, o.Path)
}
