package vfs_test

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/bwkv/bwkv/vfs"
)

// A power-loss test: run a workload on a MemFS, clone it as a power loss at
// every operation would leave it, and check each clone.
func ExampleMemFS_CrashClone() {
	m := vfs.NewMem()
	var clones []*vfs.MemFS
	m.SetHook(func(op vfs.Op) {
		clones = append(clones, m.CrashClone(vfs.CrashOptions{KeepUnsynced: 0.5, Seed: op.Index}))
	})

	f, _ := m.Create("/CURRENT.tmp")     // 1
	f.Write([]byte("MANIFEST-000002\n")) // 2
	f.Sync()                             // 3
	f.Close()
	m.Rename("/CURRENT.tmp", "/CURRENT") // 4
	m.SyncDir("/")                       // 5

	for i, c := range clones {
		names, _ := c.List("/")
		fmt.Println("crash after op", i+1, "leaves", names)
	}
	// Output:
	// crash after op 1 leaves []
	// crash after op 2 leaves []
	// crash after op 3 leaves []
	// crash after op 4 leaves []
	// crash after op 5 leaves [CURRENT]
}

// An I/O-error test: fail the i-th operation and check the error.
func ExampleInjector() {
	inj := vfs.NewInjector(vfs.NewMem())
	inj.SetFailAt(3, vfs.FaultEIO)

	f, _ := inj.Create("/wal") // op 1
	f.Write([]byte("record"))  // op 2
	err := f.Sync()            // op 3: fails
	fmt.Println(errors.Is(err, syscall.EIO), errors.Is(err, vfs.ErrInjected))
	fmt.Println(err)
	fmt.Println(inj.Ops(), "operations,", inj.Faults(), "failed")
	// Output:
	// true true
	// vfs: injected EIO at #3 sync /wal: input/output error
	// 3 operations, 1 failed
}
