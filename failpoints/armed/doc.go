// Package armed links github.com/pingcap/failpoint into a binary built with
// -tags failpoints: its init hands failpoint.Eval to package failpoints, so
// GO_FAILPOINTS (or failpoint.Enable) arms the catalogue's points.
//
// Only tests and crash tools import it, for its side effect:
//
//	import _ "github.com/bwkv/bwkv/failpoints/armed"
//
// Without the tag the package is empty. Keeping the pingcap/failpoint
// import out of every package the library's users compile means go mod
// tidy in their modules does not pull in pingcap/failpoint's own
// dependencies (golang.org/x/tools among them).
//
// Internal to bwkv; no API stability promise.
package armed
