package manifest

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwkv/bwkv/vfs"
)

var errInjected = errors.New("injected fault")

// failOn returns a hook that fails op on files whose base name has prefix.
func failOn(op, prefix string) func(string, string) error {
	return func(o, name string) error {
		if o == op && strings.HasPrefix(filepath.Base(name), prefix) {
			return errInjected
		}
		return nil
	}
}

// TestAppendFailureIsSticky: a failed append or fsync leaves the commit in
// doubt; the Manifest refuses every later commit, and a reopen finds the
// state before or after it.
func TestAppendFailureIsSticky(t *testing.T) {
	for _, op := range []string{"write", "sync"} {
		t.Run(op, func(t *testing.T) {
			fsys := &faultFS{FS: vfs.Default()}
			dir := t.TempDir()
			m, _ := mustOpen(t, fsys, dir, true)
			g := newGen(10)
			commitAll(t, m, g, 5)
			before := g.shadow.Clone()
			fsys.setHook(failOn(op, manifestPrefix))
			e := g.next(t)
			if err := m.Commit(e); !errors.Is(err, errInjected) {
				t.Fatalf("Commit: %v, want the injected fault", err)
			}
			sameState(t, "state after a failed commit", m.State(), before)
			fsys.setHook(nil)
			if err := m.Commit(&Edit{}); !errors.Is(err, errInjected) {
				t.Fatalf("Commit after failure: %v, want the sticky fault", err)
			}
			if err := m.Rotate(); !errors.Is(err, errInjected) {
				t.Fatalf("Rotate after failure: %v, want the sticky fault", err)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			_, got := mustOpen(t, fsys, dir, false)
			want := before
			if op == "sync" {
				want = g.shadow // written, and the OS kept it
			}
			sameState(t, "reopen", got, want)
		})
	}
}

// TestRotationFailureBeforeRename: a rotation that fails before CURRENT is
// renamed commits nothing, removes its file and leaves the Manifest usable.
func TestRotationFailureBeforeRename(t *testing.T) {
	steps := []struct{ op, prefix string }{
		{"create", manifestPrefix},
		{"write", manifestPrefix},
		{"sync", manifestPrefix},
		{"syncdir", ""},
		{"create", currentTemp},
		{"write", currentTemp},
		{"sync", currentTemp},
	}
	for _, s := range steps {
		t.Run(s.op+" "+s.prefix, func(t *testing.T) {
			fsys := &faultFS{FS: vfs.Default()}
			dir := t.TempDir()
			m, _ := mustOpen(t, fsys, dir, true)
			g := newGen(11)
			commitAll(t, m, g, 5)
			before := g.shadow.Clone()
			oldFiles := manifestFiles(t, fsys, dir)
			m.SetRotateBytes(1) // the next commit rotates
			fsys.setHook(failOn(s.op, s.prefix))
			if err := m.Commit(g.next(t)); !errors.Is(err, errInjected) {
				t.Fatalf("Commit: %v, want the injected fault", err)
			}
			fsys.setHook(nil)
			sameState(t, "after failed rotation", m.State(), before)
			if got := manifestFiles(t, fsys, dir); len(got) != 1 || got[0] != oldFiles[0] {
				t.Fatalf("manifest files %v, want %v", got, oldFiles)
			}
			_, st, err := Open(fsys, dir, false)
			if err != nil {
				t.Fatal(err)
			}
			sameState(t, "reopen after failed rotation", st, before)
			// Still usable: the retried rotation commits.
			g.shadow = before
			commitAll(t, m, g, 3)
			_, st, err = Open(fsys, dir, false)
			if err != nil {
				t.Fatal(err)
			}
			sameState(t, "reopen after retry", st, g.shadow)
		})
	}
}

// TestRotationFailureAfterRename: from the rename on, the outcome is
// unknown: the Manifest fails, and a reopen finds one of the two states.
func TestRotationFailureAfterRename(t *testing.T) {
	for _, op := range []string{"rename", "syncdir-after-rename"} {
		t.Run(op, func(t *testing.T) {
			fsys := &faultFS{FS: vfs.Default()}
			dir := t.TempDir()
			m, _ := mustOpen(t, fsys, dir, true)
			g := newGen(12)
			commitAll(t, m, g, 5)
			before := g.shadow.Clone()
			m.SetRotateBytes(1)
			renamed := false
			fsys.setHook(func(o, name string) error {
				switch {
				case op == "rename" && o == "rename":
					return errInjected
				case o == "rename":
					renamed = true
				case o == "syncdir" && renamed:
					return errInjected
				}
				return nil
			})
			if err := m.Commit(g.next(t)); !errors.Is(err, errInjected) {
				t.Fatalf("Commit: %v, want the injected fault", err)
			}
			fsys.setHook(nil)
			if err := m.Commit(&Edit{}); !errors.Is(err, errInjected) {
				t.Fatalf("Commit after failure: %v, want the sticky fault", err)
			}
			_, st, err := Open(fsys, dir, false)
			if err != nil {
				t.Fatal(err)
			}
			want := before
			if renamed {
				want = g.shadow
			}
			sameState(t, "reopen", st, want)
		})
	}
}

// TestOldManifestRemovalFailure: failing to remove the old file after a
// rotation is harmless; the next Prepare removes it.
func TestOldManifestRemovalFailure(t *testing.T) {
	fsys := &faultFS{FS: vfs.Default()}
	dir := t.TempDir()
	m, _ := mustOpen(t, fsys, dir, true)
	g := newGen(13)
	commitAll(t, m, g, 3)
	fsys.setHook(failOn("remove", manifestPrefix))
	if err := m.Rotate(); err != nil {
		t.Fatal(err)
	}
	fsys.setHook(nil)
	if got := manifestFiles(t, fsys, dir); len(got) != 2 {
		t.Fatalf("manifest files %v, want the old one left behind", got)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, st := mustOpen(t, fsys, dir, false)
	sameState(t, "reopen", st, g.shadow)
	if err := m2.Prepare(); err != nil {
		t.Fatal(err)
	}
	if got := manifestFiles(t, fsys, dir); len(got) != 1 || got[0] != "MANIFEST-000002" {
		t.Fatalf("after Prepare: %v", got)
	}
}
