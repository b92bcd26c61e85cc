package pool_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bwkv/bwkv/pool"
	"github.com/bwkv/bwkv/vfs"
)

// filesFixture writes n small data files to a memory FS and returns a
// Files cache over them that counts the files open right now (so a test
// sees descriptors, not just the cache's own count).
type filesFixture struct {
	fs     vfs.FS
	frames [][]uint64 // addresses of each file's frames
	live   atomic.Int64
	peak   atomic.Int64
}

type countedFile struct {
	vfs.File
	fx *filesFixture
}

func (c countedFile) Close() error {
	c.fx.live.Add(-1)
	return c.File.Close()
}

func newFilesFixture(t *testing.T, n int) *filesFixture {
	fx := &filesFixture{fs: vfs.NewMem()}
	for i := range n {
		frames := testFrames(uint64(1+i*100), 4)
		writeFile(t, fx.fs, fmt.Sprint(i), frames)
		var addrs []uint64
		for _, f := range frames {
			addrs = append(addrs, f.Addr)
		}
		fx.frames = append(fx.frames, addrs)
	}
	return fx
}

func (fx *filesFixture) open(id uint64) (*pool.File, error) {
	f, err := fx.fs.Open(fmt.Sprint(id))
	if err != nil {
		return nil, err
	}
	pf, err := pool.OpenFile(countedFile{f, fx}, fmt.Sprint(id))
	if err != nil {
		f.Close()
		return nil, err
	}
	n := fx.live.Add(1)
	for p := fx.peak.Load(); n > p && !fx.peak.CompareAndSwap(p, n); p = fx.peak.Load() {
	}
	return pf, nil
}

func read(t *testing.T, c *pool.Files, fx *filesFixture, id int) {
	t.Helper()
	h, err := c.Acquire(uint64(id))
	if err != nil {
		t.Fatalf("Acquire(%d): %v", id, err)
	}
	defer c.Release(h)
	a := fx.frames[id][0]
	if fr, err := h.File().ReadFrame(a); err != nil || fr.Addr != a {
		t.Fatalf("file %d: ReadFrame(%d) = %v, %v", id, a, fr, err)
	}
}

// TestFilesBoundLRU: reading 64 files through a cache of 8 keeps at most 8
// open; the least recently used idle file is the one closed.
func TestFilesBoundLRU(t *testing.T) {
	fx := newFilesFixture(t, 64)
	c := pool.NewFiles(8, fx.open)
	for round := range 3 {
		for id := range 64 {
			read(t, c, fx, id)
			if n := fx.live.Load(); n > 8 {
				t.Fatalf("round %d file %d: %d files open, bound 8", round, id, n)
			}
		}
	}
	if got := c.Open(); got != 8 {
		t.Fatalf("Open() = %d after the scans, want 8", got)
	}
	// Files 56..63 are open; touching 56 makes 57 the least recent, so the
	// next new file closes 57 and a read of 56 opens nothing.
	read(t, c, fx, 56)
	opens := c.Opens()
	read(t, c, fx, 0)
	read(t, c, fx, 56)
	if got := c.Opens() - opens; got != 1 {
		t.Fatalf("%d opens, want 1 (56 was recently used and must stay open)", got)
	}
	read(t, c, fx, 57)
	if got := c.Opens() - opens; got != 2 {
		t.Fatalf("%d opens, want 2 (57 was the least recently used)", got)
	}
	c.CloseAll()
	if n := fx.live.Load(); n != 0 {
		t.Fatalf("%d files open after CloseAll", n)
	}
}

// TestFilesHeldHandleSurvives: a held handle stays readable while the
// cache closes everything else around it, and only held files exceed the
// bound.
func TestFilesHeldHandleSurvives(t *testing.T) {
	fx := newFilesFixture(t, 32)
	c := pool.NewFiles(1, fx.open)
	var held []*pool.Handle
	for id := range 4 {
		h, err := c.Acquire(uint64(id))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, h)
	}
	for id := 4; id < 32; id++ {
		read(t, c, fx, id)
	}
	if n := fx.live.Load(); n > 5 {
		t.Fatalf("%d files open with 4 held and bound 1", n)
	}
	for id, h := range held {
		a := fx.frames[id][1]
		if _, err := h.File().ReadFrame(a); err != nil {
			t.Fatalf("held file %d: %v", id, err)
		}
		c.Release(h)
	}
	if n := fx.live.Load(); n != 1 {
		t.Fatalf("%d files open after releasing, want the bound 1", n)
	}
}

// TestFilesRetire: a retired file gets no new handle; its channel closes
// only when its last reader releases it, and the file is closed by then.
func TestFilesRetire(t *testing.T) {
	fx := newFilesFixture(t, 3)
	c := pool.NewFiles(8, fx.open)
	h, err := c.Acquire(1)
	if err != nil {
		t.Fatal(err)
	}
	read(t, c, fx, 2)
	gone := c.Retire(1)
	select {
	case <-gone:
		t.Fatal("retired file closed while a reader holds it")
	default:
	}
	if _, err := c.Acquire(1); !errors.Is(err, pool.ErrRetired) {
		t.Fatalf("Acquire of a retired file: %v, want ErrRetired", err)
	}
	if _, err := h.File().ReadFrame(fx.frames[1][0]); err != nil {
		t.Fatalf("held handle of a retired file: %v", err)
	}
	before := fx.live.Load()
	c.Release(h)
	select {
	case <-gone:
	default:
		t.Fatal("retired file not closed after its last release")
	}
	if fx.live.Load() != before-1 {
		t.Fatal("retired file's descriptor still open")
	}
	// An idle file retires at once.
	select {
	case <-c.Retire(2):
	default:
		t.Fatal("idle retired file not closed at once")
	}
	// Once forgotten (unlinked), an Acquire tries to open it again.
	c.Forget(1)
	if err := fx.fs.Remove("1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(1); err == nil || errors.Is(err, pool.ErrRetired) {
		t.Fatalf("Acquire of an unlinked file: %v, want an open error", err)
	}
	if c.Open() != 0 {
		t.Fatalf("Open() = %d, want 0 (the failed open must not stay)", c.Open())
	}
}

// TestFilesConcurrent: readers on random files with a small bound all
// succeed, and open files never exceed the bound plus the readers.
func TestFilesConcurrent(t *testing.T) {
	const files, readers, bound = 40, 6, 4
	fx := newFilesFixture(t, files)
	c := pool.NewFiles(bound, fx.open)
	var wg sync.WaitGroup
	errc := make(chan error, readers)
	for g := range readers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 2000 {
				id := rng.IntN(files)
				h, err := c.Acquire(uint64(id))
				if err != nil {
					errc <- err
					return
				}
				a := fx.frames[id][rng.IntN(len(fx.frames[id]))]
				_, err = h.File().ReadFrame(a)
				c.Release(h)
				if err != nil {
					errc <- fmt.Errorf("file %d frame %d: %w", id, a, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if p := fx.peak.Load(); p > bound+readers {
		t.Fatalf("peak %d files open, bound %d + %d readers", p, bound, readers)
	}
	if n := c.Open(); n > bound {
		t.Fatalf("%d files open when idle, bound %d", n, bound)
	}
}
