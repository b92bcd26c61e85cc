//go:build failpoints

package failpoints

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Enabled reports whether failpoints are compiled in (-tags failpoints).
const Enabled = true

// EnvVar configures the armed failpoint: name:N[:action].
const EnvVar = "BWKV_FAILPOINT"

var (
	once   sync.Once
	target string
	nth    int64
	action string
	hits   atomic.Int64
)

func load() {
	spec := os.Getenv(EnvVar)
	if spec == "" {
		return
	}
	parts := strings.Split(spec, ":")
	target = parts[0]
	nth = 1
	if len(parts) > 1 {
		if n, err := strconv.ParseInt(parts[1], 10, 64); err == nil && n > 0 {
			nth = n
		}
	}
	action = "kill"
	if len(parts) > 2 {
		action = parts[2]
	}
}

// Hit marks one pass through the named protocol step and fires the armed
// action at its N-th hit.
func Hit(name string) {
	once.Do(load)
	if target == "" || name != target {
		return
	}
	if hits.Add(1) != nth {
		return
	}
	switch action {
	case "panic":
		panic(fmt.Sprintf("failpoint %s hit %d", name, nth))
	default:
		// Tell the parent which point fired, then die without running
		// deferred code: a panic is not a crash.
		fmt.Fprintf(os.Stderr, "failpoint %s fired at hit %d\n", name, nth)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}
