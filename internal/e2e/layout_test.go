package e2e

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/benchfleet/benchfleet/"

// internalTable reads the table of the "## internal/" section of
// docs/ARCHITECTURE.md: each row's package and kind.
func internalTable(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## internal/"
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			t.Fatalf("ARCHITECTURE.md internal/ row without a kind: %s", line)
		}
		pkg := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if _, dup := rows[pkg]; dup {
			t.Errorf("ARCHITECTURE.md lists %s twice", pkg)
		}
		rows[pkg] = strings.TrimSpace(cells[2])
	}
	if len(rows) == 0 {
		t.Fatal(`ARCHITECTURE.md has no "## internal/" table`)
	}
	return rows
}

// goList lists the import paths of patterns, relative to the module.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-e", "-f", "{{.ImportPath}}"}, args...)...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(p, module); ok {
			pkgs = append(pkgs, rel)
		}
	}
	return pkgs
}

// docs/ARCHITECTURE.md's table of internal/ is what `go list ./internal/...`
// finds: one row per package, no stale row; each row's kind is one of the
// four, a test kit's name ends (fleettest: begins) in "test", and only a
// kit's does, a suite lives
// in internal/e2e, and the binary links no test kit or suite.
func TestInternalTableMatchesPackages(t *testing.T) {
	rows := internalTable(t)
	pkgs := goList(t, "./internal/...")
	for _, p := range pkgs {
		if _, ok := rows[p]; !ok {
			t.Errorf("%s is not in docs/ARCHITECTURE.md's table of internal/", p)
		}
	}
	for p, kind := range rows {
		if !slices.Contains(pkgs, p) {
			t.Errorf("docs/ARCHITECTURE.md's table of internal/ lists %s, which go list does not find", p)
		}
		base := path.Base(p)
		kit := strings.HasSuffix(base, "test")
		switch kind {
		case "product", "helper", "test suite":
			if kit {
				t.Errorf("%s is named like a test kit but is a %s", p, kind)
			}
			if kind == "test suite" && p != "internal/e2e" && !strings.HasPrefix(p, "internal/e2e/") {
				t.Errorf("test suite %s is not in internal/e2e", p)
			}
		case "test kit":
			if !kit {
				t.Errorf("test kit %s: a kit's name ends in test", p)
			}
		default:
			t.Errorf("%s: kind %q, want product, helper, test kit or test suite", p, kind)
		}
	}
	for _, dep := range goList(t, "-deps", "./cmd/benchfleet") {
		if k := rows[dep]; k == "test kit" || k == "test suite" {
			t.Errorf("the binary links %s, a %s", dep, k)
		}
	}
}
