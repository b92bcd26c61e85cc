package vfs_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bwkv/bwkv/vfs"
)

// impl is one FS under the conformance tests, with a fresh directory to
// work in.
type impl struct {
	name string
	fs   vfs.FS
	dir  string
}

// impls returns every FS implementation, each with an empty directory.
func impls(t *testing.T) []impl {
	t.Helper()
	mem := func() (vfs.FS, string) {
		m := vfs.NewMem()
		if err := m.MkdirAll("/db", 0o755); err != nil {
			t.Fatal(err)
		}
		return m, "/db"
	}
	m1, d1 := mem()
	m2, d2 := mem()
	return []impl{
		{"os", vfs.Default(), t.TempDir()},
		{"mem", m1, d1},
		{"injector(os)", vfs.NewInjector(vfs.Default()), t.TempDir()},
		{"injector(mem)", vfs.NewInjector(m2), d2},
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	must(t, err)
	defer f.Close()
	size, err := f.Size()
	must(t, err)
	b := make([]byte, size)
	if n, err := f.ReadAt(b, 0); err != nil && !(err == io.EOF && n == len(b)) {
		t.Fatalf("ReadAt %s: %d, %v", name, n, err)
	}
	return string(b)
}

func writeFile(t *testing.T, fsys vfs.FS, name, data string) {
	t.Helper()
	f, err := fsys.Create(name)
	must(t, err)
	_, err = f.Write([]byte(data))
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
}

func TestFileRoundTrip(t *testing.T) {
	for _, im := range impls(t) {
		t.Run(im.name, func(t *testing.T) {
			name := filepath.Join(im.dir, "f")
			f, err := im.fs.Create(name)
			must(t, err)
			if n, err := f.Write([]byte("hello")); n != 5 || err != nil {
				t.Fatalf("Write: %d, %v", n, err)
			}
			if n, err := f.WriteAt([]byte(" world"), 5); n != 6 || err != nil {
				t.Fatalf("WriteAt: %d, %v", n, err)
			}
			if n, err := f.Write([]byte("H")); n != 1 || err != nil { // offset 5, not the end
				t.Fatalf("Write: %d, %v", n, err)
			}
			if size, err := f.Size(); size != 11 || err != nil {
				t.Fatalf("Size: %d, %v", size, err)
			}
			buf := make([]byte, 20)
			n, err := f.ReadAt(buf, 0)
			if n != 11 || err != io.EOF || string(buf[:n]) != "helloHworld" {
				t.Fatalf("ReadAt: %d %q, %v", n, buf[:n], err)
			}
			if n, err := f.ReadAt(buf[:3], 20); n != 0 || err != io.EOF {
				t.Fatalf("ReadAt past end: %d, %v", n, err)
			}
			must(t, f.Truncate(3))
			must(t, f.Truncate(6))
			must(t, f.Sync())
			must(t, f.Close())
			if err := f.Close(); err == nil {
				t.Fatal("second Close succeeded")
			}
			if got := readFile(t, im.fs, name); got != "hel\x00\x00\x00" {
				t.Fatalf("after truncates: %q", got)
			}
			fi, err := im.fs.Stat(name)
			must(t, err)
			if fi.Size() != 6 || fi.IsDir() || fi.Name() != "f" {
				t.Fatalf("Stat: %v %v %q", fi.Size(), fi.IsDir(), fi.Name())
			}

			ro, err := im.fs.Open(name)
			must(t, err)
			if _, err := ro.Write([]byte("x")); err == nil {
				t.Fatal("Write on a read-only file succeeded")
			}
			must(t, ro.Close())

			rw, err := im.fs.OpenReadWrite(name)
			must(t, err)
			_, err = rw.Write([]byte("HE"))
			must(t, err)
			must(t, rw.Close())
			if got := readFile(t, im.fs, name); got != "HEl\x00\x00\x00" {
				t.Fatalf("after OpenReadWrite: %q", got)
			}

			writeFile(t, im.fs, name, "new") // Create truncates
			if got := readFile(t, im.fs, name); got != "new" {
				t.Fatalf("after re-Create: %q", got)
			}
		})
	}
}

func TestDirectories(t *testing.T) {
	for _, im := range impls(t) {
		t.Run(im.name, func(t *testing.T) {
			p := func(s string) string { return filepath.Join(im.dir, s) }
			must(t, im.fs.MkdirAll(p("sub/deeper"), 0o755))
			must(t, im.fs.MkdirAll(p("sub/deeper"), 0o755)) // exists: fine
			for _, n := range []string{"c", "a", "b"} {
				writeFile(t, im.fs, p(n), n)
			}
			must(t, im.fs.SyncDir(im.dir))
			names, err := im.fs.List(im.dir)
			must(t, err)
			if want := []string{"a", "b", "c", "sub"}; !slices.Equal(names, want) {
				t.Fatalf("List = %q, want %q", names, want)
			}
			fi, err := im.fs.Stat(p("sub"))
			must(t, err)
			if !fi.IsDir() {
				t.Fatal("Stat(sub).IsDir() = false")
			}
			if _, err := im.fs.List(p("a")); err == nil {
				t.Fatal("List of a file succeeded")
			}
			if err := im.fs.Remove(p("sub")); err == nil {
				t.Fatal("Remove of a non-empty directory succeeded")
			}
			must(t, im.fs.Remove(p("sub/deeper")))

			must(t, im.fs.Rename(p("a"), p("b"))) // replaces b
			must(t, im.fs.Rename(p("c"), p("sub/c")))
			must(t, im.fs.Remove(p("sub/c")))
			must(t, im.fs.SyncDir(im.dir))
			names, err = im.fs.List(im.dir)
			must(t, err)
			if want := []string{"b", "sub"}; !slices.Equal(names, want) {
				t.Fatalf("List after renames = %q, want %q", names, want)
			}
			if got := readFile(t, im.fs, p("b")); got != "a" {
				t.Fatalf("b = %q after rename a -> b", got)
			}
			if _, err := im.fs.Create(p("b/x")); err == nil {
				t.Fatal("Create below a file succeeded")
			}
			if err := im.fs.MkdirAll(p("b/x"), 0o755); err == nil {
				t.Fatal("MkdirAll below a file succeeded")
			}
		})
	}
}

// TestNotExist checks that every operation on a missing name fails with an
// error os.IsNotExist recognizes.
func TestNotExist(t *testing.T) {
	for _, im := range impls(t) {
		t.Run(im.name, func(t *testing.T) {
			missing := filepath.Join(im.dir, "missing")
			ops := []struct {
				name string
				fn   func() error
			}{
				{"Open", func() error { _, err := im.fs.Open(missing); return err }},
				{"OpenReadWrite", func() error { _, err := im.fs.OpenReadWrite(missing); return err }},
				{"Stat", func() error { _, err := im.fs.Stat(missing); return err }},
				{"Remove", func() error { return im.fs.Remove(missing) }},
				{"Rename", func() error { return im.fs.Rename(missing, missing+"2") }},
				{"List", func() error { _, err := im.fs.List(missing); return err }},
				{"SyncDir", func() error { return im.fs.SyncDir(missing) }},
				{"Create in missing dir", func() error { _, err := im.fs.Create(filepath.Join(missing, "f")); return err }},
				{"Lock in missing dir", func() error { _, err := im.fs.Lock(filepath.Join(missing, "LOCK")); return err }},
			}
			for _, op := range ops {
				err := op.fn()
				if !os.IsNotExist(err) || !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s: err = %v, want one os.IsNotExist recognizes", op.name, err)
				}
			}
		})
	}
}

func TestLock(t *testing.T) {
	for _, im := range impls(t) {
		t.Run(im.name, func(t *testing.T) {
			name := filepath.Join(im.dir, "LOCK")
			l1, err := im.fs.Lock(name)
			must(t, err)
			if _, err := im.fs.Stat(name); err != nil {
				t.Fatalf("Lock did not create the file: %v", err)
			}
			l2, err := im.fs.Lock(name)
			if !errors.Is(err, vfs.ErrLocked) {
				t.Fatalf("second Lock: %v, %v; want ErrLocked", l2, err)
			}
			other, err := im.fs.Lock(filepath.Join(im.dir, "OTHER"))
			must(t, err)
			must(t, other.Close())
			must(t, l1.Close())
			if err := l1.Close(); err == nil {
				t.Fatal("second Close of a lock succeeded")
			}
			l3, err := im.fs.Lock(name)
			must(t, err)
			must(t, l3.Close())
		})
	}
}

func TestConcurrentReadWrite(t *testing.T) {
	for _, im := range impls(t) {
		t.Run(im.name, func(t *testing.T) {
			f, err := im.fs.Create(filepath.Join(im.dir, "f"))
			must(t, err)
			defer f.Close()
			const writers, size = 4, 256
			done := make(chan error, writers)
			for w := range writers {
				go func() {
					b := bytes.Repeat([]byte{byte('a' + w)}, size)
					for i := range 16 {
						if _, err := f.WriteAt(b, int64((i*writers+w)*size)); err != nil {
							done <- err
							return
						}
						got := make([]byte, size)
						if _, err := f.ReadAt(got, int64((i*writers+w)*size)); err != nil {
							done <- err
							return
						}
						if !bytes.Equal(got, b) {
							done <- errors.New("read back a different block")
							return
						}
					}
					done <- f.Sync()
				}()
			}
			for range writers {
				must(t, <-done)
			}
		})
	}
}
