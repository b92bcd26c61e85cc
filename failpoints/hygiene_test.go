package failpoints_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestUsersDoNotLinkPingcap: no package a user of the library compiles
// imports github.com/pingcap/failpoint under any build tag. go mod tidy in
// a user's module reads every tag of every imported package, so one
// tagged import would put pingcap/failpoint's own requirements
// (golang.org/x/tools among them) into that module's graph. Only
// failpoints/armed, which tests import, may link it.
func TestUsersDoNotLinkPingcap(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	out, err := exec.Command(gobin, "list", "-tags", "failpoints", "-deps",
		"-f", `{{.ImportPath}}: {{join .Imports " "}}`, "github.com/bwkv/bwkv/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var checked int
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ": ")
		if !strings.HasPrefix(pkg, "github.com/bwkv/bwkv") {
			continue
		}
		checked++
		if pkg == "github.com/bwkv/bwkv/failpoints/armed" {
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if imp == "github.com/pingcap/failpoint" || imp == "github.com/bwkv/bwkv/failpoints/armed" {
				t.Errorf("%s imports %s: users' modules would need pingcap/failpoint's dependencies", pkg, imp)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("go list named only %d bwkv packages:\n%s", checked, out)
	}
}
