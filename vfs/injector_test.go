package vfs_test

import (
	"errors"
	"io"
	"maps"
	"sync"
	"syscall"
	"testing"

	"github.com/bwkv/bwkv/vfs"
)

// injWorkload is a script of counted operations, one per step, run through
// an Injector; uncounted calls (Stat, List, Open) sit between them.
type injWorkload struct {
	fs vfs.FS
	f  vfs.File
	n  int // bytes the last write step reported
}

type injStep struct {
	kind vfs.OpKind
	run  func(w *injWorkload) error
}

var injSteps = []injStep{
	{vfs.OpMkdir, func(w *injWorkload) error { return w.fs.MkdirAll("/db", 0o755) }},
	{vfs.OpCreate, func(w *injWorkload) (err error) { w.f, err = w.fs.Create("/db/a"); return err }},
	{vfs.OpWrite, func(w *injWorkload) (err error) { w.n, err = w.f.Write([]byte("0123456789")); return err }},
	{vfs.OpWrite, func(w *injWorkload) (err error) { w.n, err = w.f.WriteAt([]byte("abcdef"), 10); return err }},
	{vfs.OpSync, func(w *injWorkload) error { return w.f.Sync() }},
	{vfs.OpTruncate, func(w *injWorkload) error { return w.f.Truncate(12) }},
	{vfs.OpSyncDir, func(w *injWorkload) error {
		if _, err := w.fs.List("/db"); err != nil {
			return err
		}
		return w.fs.SyncDir("/db")
	}},
	{vfs.OpRename, func(w *injWorkload) error {
		if err := w.f.Close(); err != nil {
			return err
		}
		return w.fs.Rename("/db/a", "/db/b")
	}},
	{vfs.OpWrite, func(w *injWorkload) error {
		f, err := w.fs.OpenReadWrite("/db/b")
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := w.fs.Stat("/db/b"); err != nil {
			return err
		}
		w.n, err = f.WriteAt([]byte("XY"), 0)
		return err
	}},
	{vfs.OpRemove, func(w *injWorkload) error { return w.fs.Remove("/db/b") }},
}

func TestInjectorCountsOps(t *testing.T) {
	inj := vfs.NewInjector(vfs.NewMem())
	w := &injWorkload{fs: inj}
	for i, s := range injSteps {
		must(t, s.run(w))
		if got := inj.Ops(); got != int64(i+1) {
			t.Fatalf("after step %d (%v) Ops() = %d", i+1, s.kind, got)
		}
	}
	if inj.Faults() != 0 {
		t.Fatalf("Faults() = %d without SetFailAt", inj.Faults())
	}
}

// TestInjectorFailsIthOp fails each operation of the workload in turn with
// each fault kind and checks that exactly that operation fails, with the
// right error, and (except for a short write's prefix) without reaching the
// inner FS.
func TestInjectorFailsIthOp(t *testing.T) {
	kinds := []struct {
		kind  vfs.FaultKind
		errno syscall.Errno
	}{
		{vfs.FaultEIO, syscall.EIO},
		{vfs.FaultENOSPC, syscall.ENOSPC},
		{vfs.FaultShortWrite, syscall.ENOSPC},
	}
	for _, k := range kinds {
		for i := int64(1); i <= int64(len(injSteps)); i++ {
			step := injSteps[i-1]
			t.Run(k.kind.String()+"/"+step.kind.String(), func(t *testing.T) {
				mem := vfs.NewMem()
				inj := vfs.NewInjector(mem)
				inj.SetFailAt(i, k.kind)
				w := &injWorkload{fs: inj}
				for _, s := range injSteps[:i-1] {
					must(t, s.run(w))
				}
				before := dump(t, mem)
				err := step.run(w)

				if !errors.Is(err, vfs.ErrInjected) || !errors.Is(err, k.errno) {
					t.Fatalf("op %d: err = %v, want an injected %v", i, err, k.errno)
				}
				var fe *vfs.FaultError
				if !errors.As(err, &fe) || fe.Op.Index != i || fe.Op.Kind != step.kind {
					t.Fatalf("op %d: FaultError = %+v, want index %d kind %v", i, fe, i, step.kind)
				}
				short := k.kind == vfs.FaultShortWrite && step.kind == vfs.OpWrite
				if got := errors.Is(err, io.ErrShortWrite); got != short {
					t.Fatalf("errors.Is(%v, io.ErrShortWrite) = %v, want %v", err, got, short)
				}
				if after := dump(t, mem); !short && !maps.Equal(before, after) {
					t.Fatalf("failed op changed the inner FS: %q -> %q", before, after)
				}
				if short {
					if fe.Written != w.n || w.n == 0 {
						t.Fatalf("short write reported %d bytes, FaultError.Written = %d", w.n, fe.Written)
					}
					want := map[int64]string{3: "01234", 4: "0123456789abc", 9: "X123456789ab"}[i]
					for _, name := range []string{"/db/a", "/db/b"} {
						if got, ok := before[name]; ok && readFile(t, mem, name) != want {
							t.Fatalf("after short write %s = %q (was %q), want %q", name, readFile(t, mem, name), got, want)
						}
					}
				}
				// Not sticky: the next operation goes through.
				must(t, inj.MkdirAll("/after", 0o755))
				if inj.Faults() != 1 || inj.Ops() != i+1 {
					t.Fatalf("Faults() = %d, Ops() = %d; want 1, %d", inj.Faults(), inj.Ops(), i+1)
				}
			})
		}
	}
}

func TestInjectorSticky(t *testing.T) {
	const failAt = 3 // the first write
	inj := vfs.NewInjector(vfs.NewMem())
	inj.SetSticky(true)
	inj.SetFailAt(failAt, vfs.FaultShortWrite)
	w := &injWorkload{fs: inj}
	for i, s := range injSteps[:failAt] {
		err := s.run(w)
		if i+1 < failAt && err != nil {
			t.Fatalf("op %d before the fault: %v", i+1, err)
		}
		if i+1 == failAt && !errors.Is(err, io.ErrShortWrite) {
			t.Fatalf("op %d: %v, want a short write", i+1, err)
		}
	}
	later := []func() error{
		func() error { _, err := w.f.Write([]byte("more")); return err },
		func() error { return w.f.Sync() },
		func() error { return inj.MkdirAll("/x", 0o755) },
		func() error { return inj.SyncDir("/") },
		func() error { _, err := inj.Create("/db/c"); return err },
	}
	for i, op := range later {
		if err := op(); !errors.Is(err, syscall.ENOSPC) || errors.Is(err, io.ErrShortWrite) {
			t.Fatalf("op %d after a sticky fault: %v, want ENOSPC without a short write", failAt+i+1, err)
		}
	}
	if want := int64(len(later) + 1); inj.Faults() != want {
		t.Fatalf("Faults() = %d, want %d", inj.Faults(), want)
	}
	if _, err := inj.Stat("/db/a"); err != nil {
		t.Fatalf("uncounted Stat failed after a sticky fault: %v", err)
	}
	inj.SetFailAt(0, vfs.FaultEIO) // disarm
	must(t, inj.MkdirAll("/ok", 0o755))
}

func TestInjectorOverOS(t *testing.T) {
	dir := t.TempDir()
	inj := vfs.NewInjector(vfs.Default())
	f, err := inj.Create(dir + "/f") // op 1
	must(t, err)
	defer f.Close()
	inj.SetFailAt(3, vfs.FaultEIO)
	_, err = f.Write([]byte("data")) // op 2
	must(t, err)
	if err := f.Sync(); !errors.Is(err, syscall.EIO) { // op 3
		t.Fatalf("Sync = %v, want EIO", err)
	}
	must(t, f.Sync()) // op 4
}

func TestInjectorConcurrent(t *testing.T) {
	inj := vfs.NewInjector(vfs.NewMem())
	const workers, writes = 4, 100
	files := make([]vfs.File, workers)
	for w := range files {
		var err error
		files[w], err = inj.Create("/f" + string(rune('0'+w)))
		must(t, err)
	}
	inj.SetFailAt(workers+workers*writes/2, vfs.FaultEIO)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for _, f := range files {
		wg.Go(func() {
			for range writes {
				if _, err := f.Write([]byte("x")); err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if inj.Ops() != workers+workers*writes || failed != 1 || inj.Faults() != 1 {
		t.Fatalf("Ops() = %d, failures seen %d, Faults() = %d; want %d, 1, 1",
			inj.Ops(), failed, inj.Faults(), workers+workers*writes)
	}
}
