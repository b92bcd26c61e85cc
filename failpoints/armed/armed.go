//go:build failpoints

package armed

import (
	"github.com/bwkv/bwkv/failpoints"
	"github.com/pingcap/failpoint"
)

func init() {
	failpoints.SetEvaluator(func(path string) (any, error) { return failpoint.Eval(path) })
}
