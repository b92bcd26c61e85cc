package pool_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/pool"
	"github.com/bwkv/bwkv/vfs"
)

// faultFrames spans several of the writer's 256 KiB flushes, so a file
// takes several write operations.
func faultFrames() []*delta.Frame {
	frames := testFrames(1, 40)
	for i := range 6 {
		frames = append(frames, &delta.Frame{Addr: uint64(1000 + i), PID: 2, LSN: 7,
			Delta: delta.New([]byte("big"), bytes.Repeat([]byte{byte(i)}, 120<<10), 1, uint32(i), 0)})
	}
	return frames
}

// writeDurable writes frames to /db/f the way a checkpoint does: create,
// add, finish, file fsync, directory fsync. It returns the first error.
func writeDurable(fs vfs.FS, frames []*delta.Frame) error {
	f, err := fs.Create("/db/f")
	if err != nil {
		return err
	}
	defer f.Close()
	w := pool.NewFileWriter(f)
	for _, fr := range frames {
		if err := w.Add(fr); err != nil {
			if again := w.Add(fr); again != err {
				return fmt.Errorf("write error not sticky: %v, then %v", err, again)
			}
			return err
		}
	}
	if _, err := w.Finish(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return fs.SyncDir("/db")
}

// checkAfterFault opens /db/f in fs, if it exists: a file that opens must
// hold every frame intact (frames and table are written in order, the
// footer last); one that does not must fail with ErrCorruption. complete
// says the whole protocol finished, so the file must open.
func checkAfterFault(t *testing.T, what string, fs vfs.FS, frames []*delta.Frame, complete bool) {
	t.Helper()
	f, err := fs.Open("/db/f")
	if err != nil {
		if !os.IsNotExist(err) || complete {
			t.Fatalf("%s: open: %v", what, err)
		}
		return
	}
	r, err := pool.OpenFile(f, "/db/f")
	if err != nil {
		f.Close()
		if !errors.Is(err, base.ErrCorruption) || complete {
			t.Fatalf("%s: OpenFile: %v", what, err)
		}
		return
	}
	defer r.Close()
	if r.Info().Frames != len(frames) {
		t.Fatalf("%s: %d frames, want %d", what, r.Info().Frames, len(frames))
	}
	for _, want := range frames {
		got, err := r.ReadFrame(want.Addr)
		if err != nil {
			t.Fatalf("%s: ReadFrame(%d): %v", what, want.Addr, err)
		}
		if diff := sameFrame(want, got); diff != "" {
			t.Fatalf("%s: %s", what, diff)
		}
	}
}

// TestFilePowerLoss clones the file system after every operation of a
// data-file write (docs/crash-safety.md, layer 5), keeping none, half or all of the
// unsynced writes, with and without a torn last write.
func TestFilePowerLoss(t *testing.T) {
	frames := faultFrames()
	opts := []vfs.CrashOptions{
		{KeepUnsynced: 0}, {KeepUnsynced: 0.5, Seed: 1}, {KeepUnsynced: 1},
		{KeepUnsynced: 0.5, TornLastWrite: true, Seed: 2}, {KeepUnsynced: 1, TornLastWrite: true, Seed: 3},
	}
	type clone struct {
		op vfs.Op
		o  vfs.CrashOptions
		fs *vfs.MemFS
	}
	var clones []clone
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := mem.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	mem.SetHook(func(op vfs.Op) {
		for _, o := range opts {
			clones = append(clones, clone{op: op, o: o, fs: mem.CrashClone(o)})
		}
	})
	if err := writeDurable(mem, frames); err != nil {
		t.Fatal(err)
	}
	mem.SetHook(nil)
	last := mem.Ops() // the final SyncDir: after it, the file must be whole
	if len(clones) < 5*len(opts) {
		t.Fatalf("only %d operations: the sweep is too short", len(clones)/len(opts))
	}
	t.Logf("%d operations, %d clones", last, len(clones))
	for _, c := range clones {
		checkAfterFault(t, fmt.Sprintf("crash after %v %+v", c.op, c.o), c.fs, frames, c.op.Index == last)
	}
}

// TestFileWriteFaults fails each mutating operation of a data-file write
// in turn with each fault kind (docs/crash-safety.md, layer 6): the writer reports
// it, and what is left on disk is either a whole file or a corrupt one.
func TestFileWriteFaults(t *testing.T) {
	frames := faultFrames()
	count := vfs.NewInjector(vfs.NewMem())
	if err := count.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	base := count.Ops()
	if err := writeDurable(count, frames); err != nil {
		t.Fatal(err)
	}
	ops := count.Ops() - base
	t.Logf("%d operations", ops)
	for i := int64(1); i <= ops; i++ {
		for _, kind := range []vfs.FaultKind{vfs.FaultEIO, vfs.FaultENOSPC, vfs.FaultShortWrite} {
			mem := vfs.NewMem()
			in := vfs.NewInjector(mem)
			if err := in.MkdirAll("/db", 0o755); err != nil {
				t.Fatal(err)
			}
			in.SetFailAt(in.Ops()+i, kind)
			err := writeDurable(in, frames)
			what := fmt.Sprintf("op %d/%d %v", i, ops, kind)
			if !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("%s: writeDurable = %v, want the injected fault", what, err)
			}
			checkAfterFault(t, what, mem, frames, false)
		}
	}
}
