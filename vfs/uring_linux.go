//go:build linux

package vfs

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// File syncs and unlinks through io_uring.
//
// A goroutine inside a blocking system call keeps its P, the runtime's
// right to run Go code, until the runtime's monitor thread takes it back.
// That monitor wakes every 20 µs while it keeps finding work but backs off
// to every 10 ms when it does not, so an fdatasync of a few milliseconds
// usually holds its P from start to end. With GOMAXPROCS 2 that halves the
// Go code that can run meanwhile: in a relaxed 50% read-modify-write run
// on 2 cores, one P sat in the log's or the checkpointer's fdatasync while
// a writer waited runnable for 26% of the time.
//
// So a Parked file system (os_fs.go) queues its file syncs and its
// unlinks of files (which can free many blocks) on an io_uring instead.
// The kernel runs them on its own worker threads, and the caller waits for
// the completion on an eventfd read through the runtime's poller: it parks
// like a goroutine waiting on a socket, and its P runs other goroutines at
// once. It resumes when a P next polls, which on a busy process can be
// some milliseconds after the completion, so a commit's fsync does not
// take this path. Where io_uring cannot be set up (an old kernel, a
// seccomp filter, the kernel.io_uring_disabled sysctl), the plain system
// call is used.
//
// No goroutine of its own: one of the waiters at a time (the reaper) reads
// the eventfd and hands out every completion it finds, then passes the role
// on. The ring and its eventfd are made once per process, on the first
// sync, and stay open.

const (
	ringEntries = 64 // bound on syncs in flight; more wait for a slot

	opFsync       = 3  // IORING_OP_FSYNC
	opUnlinkat    = 36 // IORING_OP_UNLINKAT (Linux 5.11)
	fsyncDatasync = 1  // IORING_FSYNC_DATASYNC
	atFDCWD       = -100

	offSQRing = 0          // IORING_OFF_SQ_RING (the completion queue shares it: IORING_FEAT_SINGLE_MMAP)
	offSQEs   = 0x10000000 // IORING_OFF_SQES

	featSingleMmap  = 1 << 0 // IORING_FEAT_SINGLE_MMAP
	registerEventfd = 4      // IORING_REGISTER_EVENTFD
)

// The kernel's structures (include/uapi/linux/io_uring.h).
type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type ringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

type ringSQE struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	opFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFdIn  int32
	addr3       uint64
	pad         uint64
}

type ringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

// ring is one io_uring with its mapped queues.
type ring struct {
	fd int
	ev *os.File // the registered eventfd, non-blocking: read through the poller

	sqTail, sqHead *uint32
	sqMask         uint32
	sqArray        []uint32
	sqes           []ringSQE
	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []ringCQE

	slots chan int // free slot indices: at most ringEntries syncs in flight

	smu     sync.Mutex // the submission queue and waiters
	waiters [ringEntries]*ringWaiter

	reap    sync.Mutex    // held by the waiter that reads the eventfd
	handoff chan struct{} // a token: the reaper left, another waiter may take over
}

type ringWaiter struct {
	done chan struct{} // closed when res is set
	res  int32
	keep []byte // memory the request points to, held until it completes
}

var (
	ringOnce sync.Once
	theRing  *ring
	// ringDisabled makes every sync take the plain system call (tests).
	ringDisabled atomic.Bool
	// ringSyncs and ringUnlinks count the requests completed through the
	// ring (tests).
	ringSyncs, ringUnlinks atomic.Int64
)

// sharedRing returns the process's ring, or nil where io_uring is not
// available.
func sharedRing() *ring {
	if ringDisabled.Load() {
		return nil
	}
	ringOnce.Do(func() {
		if r, err := newRing(); err == nil {
			theRing = r
		}
	})
	return theRing
}

func newRing() (r *ring, err error) {
	var p ringParams
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, ringEntries, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, errno
	}
	r = &ring{fd: int(fd)}
	var maps [][]byte
	defer func() {
		if err != nil {
			for _, m := range maps {
				_ = unix.Munmap(m)
			}
			if r.ev != nil {
				r.ev.Close()
			}
			unix.Close(r.fd)
		}
	}()
	if p.features&featSingleMmap == 0 {
		return nil, unix.ENOSYS // kernels before 5.4: not worth a second path
	}
	sqSize := int(p.sqOff.array) + int(p.sqEntries)*4
	cqSize := int(p.cqOff.cqes) + int(p.cqEntries)*int(unsafe.Sizeof(ringCQE{}))
	size := max(sqSize, cqSize)
	rings, err := unix.Mmap(r.fd, offSQRing, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, err
	}
	maps = append(maps, rings)
	sqeBytes, err := unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(ringSQE{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, err
	}
	maps = append(maps, sqeBytes)

	at := func(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&rings[off])) }
	r.sqHead, r.sqTail, r.sqMask = at(p.sqOff.head), at(p.sqOff.tail), *at(p.sqOff.ringMask)
	r.sqArray = unsafe.Slice(at(p.sqOff.array), p.sqEntries)
	r.sqes = unsafe.Slice((*ringSQE)(unsafe.Pointer(&sqeBytes[0])), p.sqEntries)
	r.cqHead, r.cqTail, r.cqMask = at(p.cqOff.head), at(p.cqOff.tail), *at(p.cqOff.ringMask)
	r.cqes = unsafe.Slice((*ringCQE)(unsafe.Pointer(&rings[p.cqOff.cqes])), p.cqEntries)

	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	r.ev = os.NewFile(uintptr(efd), "io_uring eventfd")
	e32 := int32(efd)
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerEventfd, uintptr(unsafe.Pointer(&e32)), 1, 0, 0); errno != 0 {
		return nil, errno
	}
	r.slots = make(chan int, ringEntries)
	for i := range ringEntries {
		r.slots <- i
	}
	r.handoff = make(chan struct{}, 1)
	return r, nil
}

// sync runs fsync (datasync: fdatasync) of fd on the ring and waits for
// it. ok is false if the ring refused the request: the caller then makes
// the system call itself. Otherwise err is the sync's result.
func (r *ring) sync(fd int, datasync bool) (ok bool, err error) {
	var flags uint32
	if datasync {
		flags = fsyncDatasync
	}
	ok, err = r.do(ringSQE{opcode: opFsync, fd: int32(fd), opFlags: flags}, nil)
	if ok {
		ringSyncs.Add(1)
	}
	return ok, err
}

// unlink runs unlinkat(AT_FDCWD, name, 0) on the ring and waits for it;
// ok as for sync. Unlinking a large file frees its blocks and can take
// tens of milliseconds.
func (r *ring) unlink(name string) (ok bool, err error) {
	path, perr := unix.ByteSliceFromString(name)
	if perr != nil {
		return false, nil
	}
	e := ringSQE{opcode: opUnlinkat, fd: atFDCWD, addr: uint64(uintptr(unsafe.Pointer(&path[0])))}
	ok, err = r.do(e, path)
	if ok {
		ringUnlinks.Add(1)
	}
	return ok, err
}

// do submits e and waits for its completion; keep holds the memory e
// points to (a path) until then. ok is false if the ring refused the
// request; otherwise err is its result.
func (r *ring) do(e ringSQE, keep []byte) (ok bool, err error) {
	idx := <-r.slots
	defer func() { r.slots <- idx }()
	w := &ringWaiter{done: make(chan struct{}), keep: keep}
	e.userData = uint64(idx)
	if r.submit(idx, w, e) != nil {
		return false, nil
	}
	r.await(w)
	runtime.KeepAlive(w.keep)
	if w.res < 0 {
		return true, unix.Errno(-w.res)
	}
	return true, nil
}

// submit queues e for waiter w in slot idx and enters it into the kernel.
func (r *ring) submit(idx int, w *ringWaiter, e ringSQE) error {
	r.smu.Lock()
	defer r.smu.Unlock()
	tail := atomic.LoadUint32(r.sqTail)
	if tail-atomic.LoadUint32(r.sqHead) > r.sqMask {
		// Full, which the slots rule out (each entry is consumed when
		// entered); should it happen, the caller makes the call itself.
		return unix.EBUSY
	}
	i := tail & r.sqMask
	r.sqes[i] = e
	r.sqArray[i] = i
	r.waiters[idx] = w
	atomic.StoreUint32(r.sqTail, tail+1)
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), 1, 0, 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno == 0 && n == 1 {
			return nil
		}
		// Nothing was consumed (the kernel reports a count if it took
		// any): take the entry back.
		atomic.StoreUint32(r.sqTail, tail)
		r.waiters[idx] = nil
		if errno == 0 {
			errno = unix.EAGAIN
		}
		return errno
	}
}

// await returns once w's request has completed. The waiter that holds
// reap reads the eventfd and hands out completions until its own arrives;
// the others wait for theirs or for the role.
func (r *ring) await(w *ringWaiter) {
	for {
		if r.reap.TryLock() {
			for !r.reapUntil(w) {
			}
			r.reap.Unlock()
			select {
			case r.handoff <- struct{}{}:
			default:
			}
			return
		}
		select {
		case <-w.done:
			return
		case <-r.handoff:
		}
	}
}

// reapUntil hands out the completions posted so far and reports whether w
// has completed; if not, it first waits for the eventfd to count a new
// completion. reap is held.
func (r *ring) reapUntil(w *ringWaiter) bool {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		c := r.cqes[head&r.cqMask]
		r.smu.Lock()
		cw := r.waiters[c.userData]
		r.waiters[c.userData] = nil
		r.smu.Unlock()
		if cw != nil {
			cw.res = c.res
			close(cw.done)
		}
	}
	atomic.StoreUint32(r.cqHead, head)
	select {
	case <-w.done:
		return true
	default:
	}
	var b [8]byte
	if _, err := r.ev.Read(b[:]); err != nil {
		// The eventfd never closes, so this does not happen; should it,
		// the loop polls the queue, yielding between looks.
		runtime.Gosched()
	}
	return false
}
