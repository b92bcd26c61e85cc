package failpoints_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bwkv/bwkv/failpoints"
)

var hitRE = regexp.MustCompile(`failpoints\.(Hit|Skip)\(failpoints\.([A-Za-z0-9]+)\)`)

// TestCatalogueMatchesCode: every failpoint the code hits is in the
// catalogue, and every catalogued point is hit somewhere (a point no code
// calls would be a crash-matrix row that can never fire). Hit takes names
// from All and Skip names from Mutants, never the other way round.
func TestCatalogueMatchesCode(t *testing.T) {
	byConst := map[string]string{}
	src, err := os.ReadFile("catalogue.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^\t([A-Z][A-Za-z0-9]*)\s*=\s*"([a-z0-9_]+)"`).FindAllStringSubmatch(string(src), -1) {
		byConst[m[1]] = m[2]
	}
	used := map[string]bool{}
	err = filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bench" || d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range hitRE.FindAllStringSubmatch(string(b), -1) {
			name, ok := byConst[m[2]]
			if !ok {
				t.Errorf("%s hits failpoints.%s, which is not in the catalogue", p, m[2])
				continue
			}
			if list := failpoints.All; m[1] == "Skip" {
				list = failpoints.Mutants
				if !slices.Contains(list, name) {
					t.Errorf("%s: Skip(%s) names a point that is not in Mutants", p, m[2])
				}
			} else if !slices.Contains(list, name) {
				t.Errorf("%s: Hit(%s) names a point that is not in All", p, m[2])
			}
			used[name] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Concat(failpoints.All, failpoints.Mutants) {
		if !used[name] {
			t.Errorf("catalogued failpoint %q is hit nowhere in the code", name)
		}
	}
	for c, name := range byConst {
		inAll, inMut := slices.Contains(failpoints.All, name), slices.Contains(failpoints.Mutants, name)
		if inAll == inMut {
			t.Errorf("failpoints.%s (%q) must be in exactly one of All and Mutants", c, name)
		}
	}
}
