// Package vfs is the file-system interface every file bwkv touches goes
// through: the OS implementation, an in-memory crash-clone file system for
// power-loss tests, and an error-injecting wrapper for I/O-error tests.
//
// vfs knows nothing of the engine. Unlike the other packages it is public:
// users may pass their own FS through Options.FS.
//
// # Durability model
//
// Code written against FS may assume no more than this after a power loss,
// and MemFS enforces exactly this much:
//
//   - A file's data, size included, is durable once File.Sync returns
//     (fdatasync on the OS). Writes and truncates after the last Sync may be
//     lost, kept in part (always a prefix of them, in the order they were
//     made) or kept whole, and the last one kept may be torn.
//   - A create, rename or remove is durable once SyncDir of the directory
//     holding the name returns. A new file needs both its File.Sync and
//     SyncDir of its parent; a new directory needs SyncDir of its parent.
//     A rename between directories needs SyncDir of both.
//   - A failed Sync is not a retryable error: what it covered may be lost,
//     and a later successful Sync does not bring it back.
//
// # Implementations
//
// Default returns the OS FS, built on golang.org/x/sys/unix: File.Sync is
// fdatasync (data and the size, not timestamps: what a log or data file
// needs), SyncDir fsyncs the directory (a create, rename or remove is
// directory metadata), Lock is flock(LOCK_EX|LOCK_NB) and fails at once
// with an error wrapping ErrLocked, even against another open of the same
// file in this process. Its files are Allocators: fallocate(2) grows them
// with zeros and reserved blocks, so later writes below that size change
// no size and their fdatasync flushes data only.
//
// Parked(Default()) is the same file system with, on Linux, its file
// syncs and its unlinks of files run through an io_uring where the kernel
// offers one (uring_linux.go): the caller waits on an eventfd through the
// runtime's poller, so a sync of several milliseconds does not hold one of
// the process's Ps (GOMAXPROCS) the whole time, as a blocking system call
// does, but resumes only when a P next polls. Where io_uring is missing or
// refused, the system calls are made directly.
//
// Other OSes get portable fallbacks (os_other.go, os_nounix.go): fsync
// for fdatasync, no preallocation, and no Lock without flock.
//
// NewMem returns a MemFS, which keeps the synced and the current state of
// every file and directory. CrashClone builds a new MemFS with the state a
// power loss would leave; SetHook reports every mutating operation with a
// running index, so a test can clone at the k-th write or sync for
// k = 1..Ops() (docs/crash-safety.md, layer 5).
//
// MemFS files are Allocators too (the size grows with zeros, durable after
// Sync like a truncate), so the power-loss tests see preallocated tails.
//
// NewInjector wraps any FS and fails its i-th mutating operation with EIO,
// ENOSPC or a short write, once or from then on (docs/crash-safety.md, layer 6).
//
// # Concurrency and memory
//
// All three FS implementations and their files are safe for concurrent use.
// ReadAt and WriteAt may run concurrently on one File; Write advances a
// per-File offset, so concurrent Writes on one File land in some order. No
// implementation keeps the buffer passed to Write or WriteAt after the call
// returns, and slices returned (List) belong to the caller. Errors for
// missing files satisfy os.IsNotExist and errors.Is(err, fs.ErrNotExist).
//
// # Caveats
//
//   - Lock is advisory, and flock may be a no-op on some network file
//     systems. The lock lives on the file, not the name: removing or
//     replacing a held lock file lets a second Lock succeed.
//   - MemFS resolves every path from its own root ("db/x" and "/db/x" are
//     the same file), has no symlinks and does not enforce permissions.
//   - CrashClone always drops directory changes that were not synced; a
//     real file system may keep some of them. It tears a write by cutting it
//     at a byte, not by leaving garbage in a sector.
package vfs
