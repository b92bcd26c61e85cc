//go:build failpoints

package failpoints_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/bwkv/bwkv/failpoints"
	_ "github.com/bwkv/bwkv/failpoints/armed" // links pingcap/failpoint under -tags failpoints
	"github.com/pingcap/failpoint"
)

// TestActions: the value an armed term returns picks the action, count
// terms count passes, and a disabled point does nothing. (kill is covered
// by the crash matrix, which watches a child die.)
func TestActions(t *testing.T) {
	const name = "test_point"
	arm := func(terms string) {
		t.Helper()
		if err := failpoint.Enable(failpoints.Prefix+name, terms); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = failpoint.Disable(failpoints.Prefix + name) })

	if err := failpoints.Hit(name); err != nil || failpoints.Skip(name) {
		t.Fatalf("unarmed point acted: %v", err)
	}
	arm(`2*off->return("error")`)
	for i := 1; i <= 2; i++ {
		if err := failpoints.Hit(name); err != nil {
			t.Fatalf("pass %d under 2*off: %v", i, err)
		}
	}
	err := failpoints.Hit(name)
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("third pass: got %v, want an injected EIO", err)
	}
	arm(`return("skip")`)
	if !failpoints.Skip(name) {
		t.Fatal("Skip under return(\"skip\") = false")
	}
	if err := failpoints.Hit(name); err != nil {
		t.Fatalf("Hit under return(\"skip\"): %v", err)
	}
	arm(`return("error")`)
	if failpoints.Skip(name) {
		t.Fatal("Skip under return(\"error\") = true")
	}
	arm(`1*sleep(1)`)
	if err := failpoints.Hit(name); err != nil {
		t.Fatalf("sleep term: %v", err)
	}
}
