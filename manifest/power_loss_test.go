package manifest

import (
	"fmt"
	"testing"

	"github.com/bwkv/bwkv/vfs"
)

const (
	plDir         = "/db"
	plRotateBytes = 300 // small, so the workload rotates often
)

// plRun is one run of the crash workload: commits with frequent
// rotations, an explicit Rotate, and a close and reopen halfway.
type plRun struct {
	t      *testing.T
	fsys   vfs.FS
	g      *gen
	states []*State // states[i]: after the i-th acknowledged commit
	acked  int      // commits that returned nil
	flight bool     // a commit is in progress
	failed *State   // with an in-doubt commit: the state it would give
}

func (r *plRun) open() *Manifest {
	m, st, err := Open(r.fsys, plDir, true)
	if err != nil {
		r.t.Fatalf("workload Open: %v", err)
	}
	sameState(r.t, "workload reopen", st, r.states[r.acked])
	m.SetRotateBytes(plRotateBytes)
	return m
}

// commit commits one generated edit; on an error it leaves the shadow as
// the Manifest's durable state and records the in-doubt outcome.
func (r *plRun) commit(m *Manifest) error {
	before := r.g.shadow.Clone()
	e := r.g.next(r.t)
	r.flight = true
	err := m.Commit(e)
	r.flight = false
	if err != nil {
		if m.failed != nil && r.failed == nil {
			r.failed = r.g.shadow
		}
		r.g.shadow = before
		return err
	}
	r.acked++
	r.states = append(r.states, r.g.shadow.Clone())
	return nil
}

// workload runs the fixed sequence; with faults it stops at the first
// failed reopen or once the Manifest has failed.
func (r *plRun) workload() {
	m := r.open()
	for i := range 24 {
		if err := r.commit(m); err != nil && m.failed != nil {
			_ = m.Close()
			return
		}
		if i == 10 {
			// Rotate commits nothing: flight stays false.
			_ = m.Rotate()
			if m.failed != nil {
				_ = m.Close()
				return
			}
		}
	}
	if err := m.Close(); err != nil {
		r.t.Fatal(err)
	}
	m, st, err := Open(r.fsys, plDir, true)
	if err != nil {
		r.t.Fatalf("workload reopen: %v", err)
	}
	sameState(r.t, "workload reopen", st, r.states[r.acked])
	m.SetRotateBytes(plRotateBytes)
	for range 8 {
		if err := r.commit(m); err != nil && m.failed != nil {
			break
		}
	}
	_ = m.Close()
}

// verify opens a crashed or faulted file system and checks the state is
// the one after some prefix of commits covering the acknowledged ones,
// that Open wrote nothing, that reopening is idempotent, and that the
// manifest accepts and keeps a new commit.
func verify(t *testing.T, what string, fsys vfs.FS, ops func() int64, candidates []*State) {
	t.Helper()
	before := ops()
	m, st, err := Open(fsys, plDir, true)
	if err != nil {
		t.Fatalf("%s: Open: %v", what, err)
	}
	if ops() != before {
		t.Fatalf("%s: Open wrote to the file system", what)
	}
	match := -1
	for i, c := range candidates {
		if c != nil && bytesEqualState(st, c) {
			match = i
			break
		}
	}
	if match < 0 {
		t.Fatalf("%s: recovered state matches none of %d candidates:\n%+v", what, len(candidates), st)
	}
	_, st2, err := Open(fsys, plDir, true)
	if err != nil || !bytesEqualState(st, st2) {
		t.Fatalf("%s: second Open differs: %v", what, err)
	}
	g := newGen(uint64(len(what)))
	g.shadow = st.Clone()
	e := g.next(t)
	if err := m.Commit(e); err != nil {
		t.Fatalf("%s: commit after recovery: %v", what, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	_, st3, err := Open(fsys, plDir, false)
	if err != nil {
		t.Fatalf("%s: Open after the recovery commit: %v", what, err)
	}
	sameState(t, what+": after the recovery commit", st3, g.shadow)
}

func bytesEqualState(a, b *State) bool {
	sa, sb := a.Snapshot(), b.Snapshot()
	sa.NextManifest, sb.NextManifest = 0, 0
	return string(sa.Encode(nil)) == string(sb.Encode(nil))
}

// TestPowerLoss crash-clones the MemFS after every operation of the
// workload, keeping none, some or all unsynced data with a torn last
// write, and checks each clone (docs/crash-safety.md, layer 5, invariants I1, I4, I6).
func TestPowerLoss(t *testing.T) {
	type crash struct {
		fs         *vfs.MemFS
		what       string
		candidates []*State
	}
	mem := vfs.NewMem()
	r := &plRun{t: t, fsys: mem, g: newGen(31), states: []*State{NewState()}}
	var crashes []crash
	renames := 0
	opts := []vfs.CrashOptions{
		{KeepUnsynced: 0},
		{KeepUnsynced: 0.5, TornLastWrite: true},
		{KeepUnsynced: 1, TornLastWrite: true},
		{KeepUnsynced: 1},
	}
	mem.SetHook(func(op vfs.Op) {
		// The hook runs inside the operation, on the workload goroutine.
		cands := []*State{r.states[r.acked]}
		if r.flight {
			cands = append(cands, r.g.shadow.Clone())
		}
		if op.Kind == vfs.OpRename {
			renames++
		}
		for _, o := range opts {
			o.Seed = op.Index
			crashes = append(crashes, crash{
				fs:         mem.CrashClone(o),
				what:       fmt.Sprintf("crash after %v (keep %.1f torn %v)", op, o.KeepUnsynced, o.TornLastWrite),
				candidates: cands,
			})
		}
	})
	r.workload()
	mem.SetHook(nil)
	if r.acked != 32 {
		t.Fatalf("workload acknowledged %d commits, want 32", r.acked)
	}
	if renames < 5 {
		t.Fatalf("workload rotated only %d times", renames)
	}
	for _, c := range crashes {
		verify(t, c.what, c.fs, c.fs.Ops, c.candidates)
	}
	t.Logf("%d crash points verified over %d operations", len(crashes), mem.Ops())
}

// TestIOErrors fails the i-th operation of the workload, for every i, with
// EIO and with a short write, then reopens the file system (docs/crash-safety.md
// layer 6): every acknowledged commit is there, a commit that failed
// cleanly is not, and an in-doubt commit is there or not, as a whole.
func TestIOErrors(t *testing.T) {
	dry := vfs.NewInjector(vfs.NewMem())
	(&plRun{t: t, fsys: dry, g: newGen(32), states: []*State{NewState()}}).workload()
	total := dry.Ops()
	for _, kind := range []vfs.FaultKind{vfs.FaultEIO, vfs.FaultShortWrite} {
		for i := int64(1); i <= total; i++ {
			mem := vfs.NewMem()
			inj := vfs.NewInjector(mem)
			inj.SetFailAt(i, kind)
			r := &plRun{t: t, fsys: inj, g: newGen(32), states: []*State{NewState()}}
			r.workload()
			if inj.Faults() != 1 {
				t.Fatalf("fault %v at %d: %d faults", kind, i, inj.Faults())
			}
			cands := []*State{r.states[r.acked], r.failed}
			verify(t, fmt.Sprintf("%v at op %d", kind, i), mem, mem.Ops, cands)
		}
	}
}
