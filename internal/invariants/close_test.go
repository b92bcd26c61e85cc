package invariants_test

import (
	"strings"
	"testing"

	"github.com/bwkv/bwkv/internal/invariants"
)

func TestCloseChecker(t *testing.T) {
	var c invariants.CloseChecker
	c.AssertOpen("Get") // open: never panics
	c.Close()
	defer func() {
		r := recover()
		if !invariants.Enabled {
			if r != nil {
				t.Fatalf("panic %v in a build without invariants", r)
			}
			return
		}
		if msg, _ := r.(string); !strings.Contains(msg, "Get after the handle was closed") {
			t.Fatalf("recovered %v, want the use-after-close panic", r)
		}
	}()
	c.AssertOpen("Get")
	if invariants.Enabled {
		t.Fatal("AssertOpen on a closed checker did not panic")
	}
}
