package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// listed is one package as `go list -json` tells it.
type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Deps       []string
}

// listAll lists the module's packages with their files and imports.
func listAll(t *testing.T, pattern string) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Dir,GoFiles,Imports,Deps", pattern)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pattern, err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// ours is the module-relative paths of the module's packages among ps.
func ours(ps []string) []string {
	var out []string
	for _, p := range ps {
		if rel, ok := strings.CutPrefix(p, module); ok {
			out = append(out, rel)
		}
	}
	return out
}

// lines counts the newlines of a package's non-test files (the CLI's
// layout test counts the same way).
func lines(t *testing.T, p listed) int {
	t.Helper()
	n := 0
	for _, f := range p.GoFiles {
		b, err := os.ReadFile(filepath.Join(p.Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		n += bytes.Count(b, []byte("\n"))
	}
	return n
}

// Each package holds one responsibility, small enough to read: at most
// 4,500 lines outside tests (the command line keeps its own cap of 3,300),
// and a package of the producer side at most 2,500.
func TestPackagesStaySmall(t *testing.T) {
	for _, p := range listAll(t, "./...") {
		rel := strings.TrimPrefix(p.ImportPath, module)
		n, limit := lines(t, p), 4500
		if rel == "producer" || strings.HasPrefix(rel, "producer/") {
			limit = 2500
		}
		if n > limit {
			t.Errorf("%s has %d lines outside tests, more than %d: cut it by responsibility", rel, n, limit)
		}
	}
}

// The arrows point down: the side that runs jobs (worker, device,
// storage, protocol) never imports the side that submits and reads
// them (producer/...), so a worker links none of it.
func TestImportArrowsPointDown(t *testing.T) {
	lower := regexp.MustCompile(`^(worker|device|storage|protocol)(/|$)`)
	for _, p := range listAll(t, "./...") {
		rel := strings.TrimPrefix(p.ImportPath, module)
		if !lower.MatchString(rel) {
			continue
		}
		for _, imp := range ours(p.Imports) {
			if imp == "producer" || strings.HasPrefix(imp, "producer/") {
				t.Errorf("%s imports %s: an arrow pointing up, from the side that runs jobs into the producer side", rel, imp)
			}
		}
	}
	for _, p := range listAll(t, "./worker/process") {
		for _, dep := range ours(p.Deps) {
			if dep == "producer" || strings.HasPrefix(dep, "producer/") {
				t.Errorf("worker/process links %s: a worker process needs nothing of the producer side", dep)
			}
		}
	}
}

// packagesTable reads the table of the "## Packages" section of
// docs/ARCHITECTURE.md: each row's package and its imports of ours.
func packagesTable(t *testing.T) map[string][]string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	sc.Buffer(nil, 1<<20)
	pkgName := regexp.MustCompile("`([a-z0-9/]+)`")
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Packages"
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			t.Fatalf("ARCHITECTURE.md Packages row without its imports: %s", line)
		}
		pkg := strings.Trim(strings.TrimSpace(cells[1]), "`")
		var imps []string
		for _, m := range pkgName.FindAllStringSubmatch(cells[len(cells)-2], -1) {
			imps = append(imps, m[1])
		}
		rows[pkg] = imps
	}
	if len(rows) == 0 {
		t.Fatal(`ARCHITECTURE.md has no "## Packages" table`)
	}
	return rows
}

// docs/ARCHITECTURE.md's table of packages (all but internal/, which has
// its own) is what go list finds: one row per package, and each row names
// every package of ours it imports, and no other (but the command line's,
// which imports everything).
func TestPackagesTableMatchesImports(t *testing.T) {
	rows := packagesTable(t)
	seen := map[string]bool{}
	for _, p := range listAll(t, "./...") {
		rel := strings.TrimPrefix(p.ImportPath, module)
		if rel == "internal" || strings.HasPrefix(rel, "internal/") || rel == "cmd/benchfleet" {
			continue
		}
		seen[rel] = true
		doc, ok := rows[rel]
		if !ok {
			t.Errorf("%s is not in docs/ARCHITECTURE.md's table of packages", rel)
			continue
		}
		imps := ours(p.Imports)
		if rel == "cmd/benchfleet/cli" {
			continue // it imports everything, and says so
		}
		for _, imp := range imps {
			if !slices.Contains(doc, imp) {
				t.Errorf("docs/ARCHITECTURE.md: %s imports %s, which its row does not name", rel, imp)
			}
		}
		for _, d := range doc {
			if !slices.Contains(imps, d) {
				t.Errorf("docs/ARCHITECTURE.md: %s's row names %s, which it does not import", rel, d)
			}
		}
	}
	for p := range rows {
		if !seen[p] {
			t.Errorf("docs/ARCHITECTURE.md's table of packages lists %s, which go list does not find", p)
		}
	}
}

// docs/ARCHITECTURE.md's first screen says where a new harness, metric,
// dashboard page, storage backend and CLI command go: every folder it
// names there is one of the module's (a `storage/<name>` stands for a new
// one), and it names each of the five.
func TestWhereThingsGoNamesRealFolders(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(doc, []byte("\n## Where a new thing goes\n"))
	if !ok {
		t.Fatal(`docs/ARCHITECTURE.md has no "## Where a new thing goes"`)
	}
	section, _, _ := bytes.Cut(rest, []byte("\n## "))
	for _, thing := range []string{"| a harness |", "| a result metric |", "| a dashboard page |", "| a storage backend |", "| a CLI command |"} {
		if !bytes.Contains(section, []byte(thing)) {
			t.Errorf("ARCHITECTURE.md does not say where %s goes", strings.Trim(thing, "| "))
		}
	}
	folder := regexp.MustCompile("`((?:cmd|device|internal|producer|protocol|storage|worker)(?:/[a-z0-9]+)*)`")
	n := 0
	for _, m := range folder.FindAllSubmatch(section, -1) {
		dir := string(m[1])
		st, err := os.Stat(filepath.Join("../..", dir))
		if err != nil || !st.IsDir() {
			t.Errorf("ARCHITECTURE.md says things go in %s, which is not a folder of the module", dir)
		}
		n++
	}
	if n < 10 {
		t.Errorf("ARCHITECTURE.md's where-things-go names %d folders; want every one it means", n)
	}
}
