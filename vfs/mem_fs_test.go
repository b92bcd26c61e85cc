package vfs_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bwkv/bwkv/vfs"
)

// dump returns every file of fsys below the root, path -> contents, and
// every directory, path -> "<dir>".
func dump(t *testing.T, fsys vfs.FS) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(dir string)
	walk = func(dir string) {
		names, err := fsys.List(dir)
		must(t, err)
		for _, n := range names {
			p := strings.TrimSuffix(dir, "/") + "/" + n
			fi, err := fsys.Stat(p)
			must(t, err)
			if fi.IsDir() {
				out[p] = "<dir>"
				walk(p)
			} else {
				out[p] = readFile(t, fsys, p)
			}
		}
	}
	walk("/")
	return out
}

// memOps are the steps of the crash scenarios, each on a *vfs.MemFS.
type memOp func(t *testing.T, m *vfs.MemFS)

func mkdir(d string) memOp {
	return func(t *testing.T, m *vfs.MemFS) { must(t, m.MkdirAll(d, 0o755)) }
}
func syncDir(d string) memOp {
	return func(t *testing.T, m *vfs.MemFS) { must(t, m.SyncDir(d)) }
}
func rename(a, b string) memOp {
	return func(t *testing.T, m *vfs.MemFS) { must(t, m.Rename(a, b)) }
}
func remove(p string) memOp {
	return func(t *testing.T, m *vfs.MemFS) { must(t, m.Remove(p)) }
}

// create creates p, writes each chunk with its own Write and syncs the
// data if sync is set.
func create(p string, sync bool, chunks ...string) memOp {
	return func(t *testing.T, m *vfs.MemFS) {
		f, err := m.Create(p)
		must(t, err)
		for _, c := range chunks {
			_, err := f.Write([]byte(c))
			must(t, err)
		}
		if sync {
			must(t, f.Sync())
		}
		must(t, f.Close())
	}
}

// appendTo opens p and appends chunks, syncing if sync is set.
func appendTo(p string, sync bool, chunks ...string) memOp {
	return func(t *testing.T, m *vfs.MemFS) {
		f, err := m.OpenReadWrite(p)
		must(t, err)
		size, err := f.Size()
		must(t, err)
		for _, c := range chunks {
			_, err := f.WriteAt([]byte(c), size)
			must(t, err)
			size += int64(len(c))
		}
		if sync {
			must(t, f.Sync())
		}
		must(t, f.Close())
	}
}

func truncate(p string, size int64, sync bool) memOp {
	return func(t *testing.T, m *vfs.MemFS) {
		f, err := m.OpenReadWrite(p)
		must(t, err)
		must(t, f.Truncate(size))
		if sync {
			must(t, f.Sync())
		}
		must(t, f.Close())
	}
}

var (
	keepNone = vfs.CrashOptions{}
	keepAll  = vfs.CrashOptions{KeepUnsynced: 1}
)

func TestCrashClone(t *testing.T) {
	// base: /d exists durably with a durable, synced file /d/f = "abc".
	base := []memOp{mkdir("/d"), syncDir("/"), create("/d/f", true, "abc"), syncDir("/d")}
	with := func(ops ...memOp) []memOp { return append(slices.Clone(base), ops...) }
	tests := []struct {
		name string
		ops  []memOp
		opts vfs.CrashOptions
		want map[string]string // files only; "" is an empty file
	}{
		{"synced state survives", base, keepNone, map[string]string{"/d/f": "abc"}},
		{"unsynced append lost", with(appendTo("/d/f", false, "de", "f")), keepNone,
			map[string]string{"/d/f": "abc"}},
		{"unsynced append kept", with(appendTo("/d/f", false, "de", "f")), keepAll,
			map[string]string{"/d/f": "abcdef"}},
		{"synced append survives", with(appendTo("/d/f", true, "de")), keepNone,
			map[string]string{"/d/f": "abcde"}},
		{"unsynced truncate lost", with(truncate("/d/f", 1, false)), keepNone,
			map[string]string{"/d/f": "abc"}},
		{"unsynced truncate kept", with(truncate("/d/f", 1, false)), keepAll,
			map[string]string{"/d/f": "a"}},
		{"re-Create truncation unsynced", with(create("/d/f", false, "xy")), keepNone,
			map[string]string{"/d/f": "abc"}},
		{"re-Create synced", with(create("/d/f", true, "xy")), keepNone,
			map[string]string{"/d/f": "xy"}},
		{"unsynced create disappears", with(create("/d/g", true, "data")), keepAll,
			map[string]string{"/d/f": "abc"}},
		{"dir-synced create without data sync is empty", with(create("/d/g", false, "data"), syncDir("/d")), keepNone,
			map[string]string{"/d/f": "abc", "/d/g": ""}},
		{"dir-synced create with data sync", with(create("/d/g", true, "data"), syncDir("/d")), keepNone,
			map[string]string{"/d/f": "abc", "/d/g": "data"}},
		{"unsynced rename reverts", with(rename("/d/f", "/d/g")), keepAll,
			map[string]string{"/d/f": "abc"}},
		{"synced rename", with(rename("/d/f", "/d/g"), syncDir("/d")), keepNone,
			map[string]string{"/d/g": "abc"}},
		{"unsynced replacing rename reverts", with(create("/d/tmp", true, "new"), syncDir("/d"), create("/d/tmp2", true, "x"),
			rename("/d/tmp2", "/d/f")), keepAll,
			map[string]string{"/d/f": "abc", "/d/tmp": "new"}},
		{"unsynced remove reverts", with(remove("/d/f")), keepNone, map[string]string{"/d/f": "abc"}},
		{"synced remove", with(remove("/d/f"), syncDir("/d")), keepNone, map[string]string{}},
		{"dir never synced in parent disappears", with(mkdir("/e"), create("/e/x", true, "x"), syncDir("/e")), keepAll,
			map[string]string{"/d/f": "abc"}},
		{"cross-dir rename, only target synced: two names", with(mkdir("/e"), syncDir("/"), rename("/d/f", "/e/f"), syncDir("/e")), keepNone,
			map[string]string{"/d/f": "abc", "/e/f": "abc"}},
		{"cross-dir rename, only source synced: gone", with(mkdir("/e"), syncDir("/"), rename("/d/f", "/e/f"), syncDir("/d")), keepNone,
			map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := vfs.NewMem()
			for _, op := range tt.ops {
				op(t, m)
			}
			before := dump(t, m)
			got := files(dump(t, m.CrashClone(tt.opts)))
			if !maps.Equal(got, tt.want) {
				t.Fatalf("clone = %q, want %q", got, tt.want)
			}
			if after := dump(t, m); !maps.Equal(after, before) {
				t.Fatalf("CrashClone changed the original: %q -> %q", before, after)
			}
		})
	}
}

// files drops the directories from a dump.
func files(d map[string]string) map[string]string {
	maps.DeleteFunc(d, func(_, v string) bool { return v == "<dir>" })
	return d
}

func TestCrashCloneTornWrite(t *testing.T) {
	const last = "0123456789"
	m := vfs.NewMem()
	create("/f", true, "ab")(t, m)
	syncDir("/")(t, m)
	appendTo("/f", false, "cd", last)(t, m)
	torn := 0
	for seed := range int64(20) {
		got := readFile(t, m.CrashClone(vfs.CrashOptions{KeepUnsynced: 1, TornLastWrite: true, Seed: seed}), "/f")
		// Synced data and the earlier unsynced write survive whole; the
		// last write is cut short.
		rest, ok := strings.CutPrefix(got, "abcd")
		if !ok || len(rest) >= len(last) || !strings.HasPrefix(last, rest) {
			t.Fatalf("seed %d: torn clone = %q, want abcd + a strict prefix of %q", seed, got, last)
		}
		if len(rest) > 0 {
			torn++
		}
	}
	if torn == 0 {
		t.Fatal("20 seeds never kept part of the torn write")
	}
}

// TestCrashClonePrefix checks, for random unsynced appends and truncates,
// that each file in a clone equals its state after some prefix of its
// unsynced changes, and that the same seed gives the same clone.
func TestCrashClonePrefix(t *testing.T) {
	seed := rand.Int64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	m := vfs.NewMem()
	states := map[string][]string{} // file -> contents after each unsynced change, synced first
	for i := range 8 {
		name := fmt.Sprintf("/f%d", i)
		create(name, true, "base")(t, m)
		states[name] = []string{"base"}
		cur := "base"
		for range 1 + rng.IntN(10) {
			if rng.IntN(4) == 0 {
				n := rng.IntN(len(cur) + 1)
				truncate(name, int64(n), false)(t, m)
				cur = cur[:n]
			} else {
				c := strings.Repeat(string(rune('a'+rng.IntN(26))), 1+rng.IntN(5))
				appendTo(name, false, c)(t, m)
				cur += c
			}
			states[name] = append(states[name], cur)
		}
	}
	syncDir("/")(t, m)
	kept := map[int]bool{}
	for s := range int64(30) {
		o := vfs.CrashOptions{KeepUnsynced: 0.5, Seed: s}
		a, b := dump(t, m.CrashClone(o)), dump(t, m.CrashClone(o))
		if !maps.Equal(a, b) {
			t.Fatalf("seed %d gave two different clones", s)
		}
		for name, content := range a {
			i := slices.Index(states[name], content)
			if i < 0 {
				t.Fatalf("seed %d: %s = %q is no prefix state of %q", s, name, content, states[name])
			}
			kept[i] = true
		}
	}
	if len(kept) < 2 {
		t.Fatalf("KeepUnsynced 0.5 kept the same number of changes every time: %v", kept)
	}
	if got := dump(t, m.CrashClone(keepAll)); !maps.EqualFunc(got, states, func(c string, s []string) bool { return c == s[len(s)-1] }) {
		t.Fatalf("KeepUnsynced 1 lost changes: %q", got)
	}
	if got := dump(t, m.CrashClone(keepNone)); !maps.EqualFunc(got, states, func(c string, s []string) bool { return c == s[0] }) {
		t.Fatalf("KeepUnsynced 0 kept changes: %q", got)
	}
}

func TestCrashCloneIsIndependent(t *testing.T) {
	m := vfs.NewMem()
	create("/f", true, "abc")(t, m)
	syncDir("/")(t, m)
	l, err := m.Lock("/LOCK")
	must(t, err)
	defer l.Close()
	c := m.CrashClone(keepNone)
	if c.Ops() != 0 {
		t.Fatalf("clone Ops = %d, want 0", c.Ops())
	}
	appendTo("/f", true, "-clone")(t, c)
	if got := readFile(t, m, "/f"); got != "abc" {
		t.Fatalf("write to the clone reached the original: %q", got)
	}
	// The clone is fully synced: a crash of the clone keeps its state...
	if got := readFile(t, c.CrashClone(keepNone), "/f"); got != "abc-clone" {
		t.Fatalf("clone of clone = %q", got)
	}
	// ...and does not inherit locks (the lock file's name was not synced,
	// so take a lock on a file that exists in the clone).
	lc, err := c.Lock("/f")
	must(t, err)
	must(t, lc.Close())
}

// TestHookClonesAtEveryOp sweeps the crash point over a small workload, as
// the power-loss layer does, and checks the clone taken at each operation.
func TestHookClonesAtEveryOp(t *testing.T) {
	m := vfs.NewMem()
	var ops []vfs.Op
	clones := map[int64]*vfs.MemFS{}
	m.SetHook(func(op vfs.Op) {
		ops = append(ops, op)
		clones[op.Index] = m.CrashClone(keepNone)
		if m.Ops() != op.Index {
			t.Errorf("Ops() = %d inside the hook for %v", m.Ops(), op)
		}
	})
	mkdir("/d")(t, m)                           // 1 mkdir
	must(t, m.MkdirAll("/d", 0o755))            // not counted: creates nothing
	syncDir("/")(t, m)                          // 2 syncdir /
	create("/d/tmp", true, "v1")(t, m)          // 3 create, 4 write, 5 sync
	rename("/d/tmp", "/d/cur")(t, m)            // 6 rename
	syncDir("/d")(t, m)                         // 7 syncdir /d
	truncate("/d/cur", 0, true)(t, m)           // 8 truncate, 9 sync
	remove("/d/cur")(t, m)                      // 10 remove
	syncDir("/d")(t, m)                         // 11 syncdir
	if _, err := m.Open("/d/cur"); err == nil { // failed ops are not counted
		t.Fatal("Open of a removed file succeeded")
	}
	m.SetHook(nil)
	syncDir("/")(t, m) // not reported

	wantKinds := []vfs.OpKind{vfs.OpMkdir, vfs.OpSyncDir, vfs.OpCreate, vfs.OpWrite, vfs.OpSync,
		vfs.OpRename, vfs.OpSyncDir, vfs.OpTruncate, vfs.OpSync, vfs.OpRemove, vfs.OpSyncDir}
	if len(ops) != len(wantKinds) || m.Ops() != int64(len(wantKinds))+1 {
		t.Fatalf("hook saw %v, Ops() = %d", ops, m.Ops())
	}
	for i, op := range ops {
		if op.Index != int64(i+1) || op.Kind != wantKinds[i] {
			t.Errorf("op %d = %v, want #%d %v", i, op, i+1, wantKinds[i])
		}
	}
	if ops[5].Path != "/d/tmp" || ops[5].To != "/d/cur" {
		t.Errorf("rename op = %+v", ops[5])
	}
	wants := map[int64]map[string]string{
		1:  {},
		2:  {"/d": "<dir>"},
		5:  {"/d": "<dir>"},                 // file data synced, name not
		6:  {"/d": "<dir>"},                 // renamed, still no name synced
		7:  {"/d": "<dir>", "/d/cur": "v1"}, // the rename and the data are durable
		8:  {"/d": "<dir>", "/d/cur": "v1"}, // truncate not synced
		9:  {"/d": "<dir>", "/d/cur": ""},
		10: {"/d": "<dir>", "/d/cur": ""}, // remove not synced
		11: {"/d": "<dir>"},
	}
	for k, want := range wants {
		if got := dump(t, clones[k]); !maps.Equal(got, want) {
			t.Errorf("clone at op %d (%v) = %q, want %q", k, ops[k-1], got, want)
		}
	}
}

// TestMemConcurrentClone runs writers, readers and cloners at once; it is
// meant for -race.
func TestMemConcurrentClone(t *testing.T) {
	m := vfs.NewMem()
	must(t, m.MkdirAll("/d", 0o755))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			name := fmt.Sprintf("/d/f%d", w)
			f, err := m.Create(name)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			for i := range 200 {
				if _, err := f.Write([]byte("record")); err != nil {
					t.Error(err)
					return
				}
				if i%10 == 0 {
					if err := f.Sync(); err != nil {
						t.Error(err)
					}
					if err := m.SyncDir("/d"); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 50 {
			c := m.CrashClone(vfs.CrashOptions{KeepUnsynced: 0.5, TornLastWrite: true, Seed: int64(i)})
			names, err := c.List("/d")
			if err != nil {
				continue // /d itself was never synced into /
			}
			for _, n := range names {
				if _, err := c.Stat("/d/" + n); err != nil {
					t.Error(err)
				}
			}
		}
	})
	wg.Wait()
}
