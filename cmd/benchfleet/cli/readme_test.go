package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// readmeSection returns the text of README.md from the heading "## name"
// to the next "## " heading.
func readmeSection(t *testing.T, readme, name string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "\n## "+name+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", name)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// The README's tour runs the built binary (go run turns
// the exit codes 2, 3 and 130 into 1, and says why), its first command is
// still `go run ./cmd/benchfleet demo`, its exit-code table has every code
// the command line returns, and its command table every command and
// subcommand (fleet release was missing).
func TestReadmeTourCommandsAndExitCodes(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)

	two := readmeSection(t, readme, "The two commands")
	_, block, _ := strings.Cut(two, "```sh\n")
	if first, _, _ := strings.Cut(block, "\n"); !strings.HasPrefix(first, "go run ./cmd/benchfleet demo") {
		t.Errorf("the README's first command is %q, want go run ./cmd/benchfleet demo", first)
	}

	tour := readmeSection(t, readme, "A 60-second tour")
	if strings.Contains(tour, "go run ") {
		t.Errorf("the tour still uses go run:\n%s", tour)
	}
	for _, want := range []string{"make build", "go install ./cmd/benchfleet", "exit codes", "130"} {
		if !strings.Contains(tour, want) {
			t.Errorf("the tour does not say %q", want)
		}
	}

	cmds := readmeSection(t, readme, "Commands")
	for _, code := range []int{ExitOK, ExitFailed, ExitGate, ExitTimeout, ExitUsage, ExitUnavailable, ExitInterrupted} {
		if !regexp.MustCompile(`(?m)^\| ` + strconv.Itoa(code) + ` \|`).MatchString(cmds) {
			t.Errorf("the exit-code table has no row for %d", code)
		}
	}
	if !strings.Contains(cmds, "go run") {
		t.Error("the exit-code table does not say that go run turns them into 1")
	}

	// Every backquoted command in the first column of the command table:
	// "`runs list/show/watch/cancel`" lists runs and its subcommands.
	listed := map[string]bool{}
	for _, line := range strings.Split(cmds, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[1], -1) {
			f := strings.Fields(m[1])
			listed[f[0]] = true
			if len(f) > 1 {
				for _, sub := range strings.Split(f[1], "/") {
					listed[f[0]+" "+sub] = true
				}
			}
		}
	}
	a := &app{}
	for _, c := range a.rootCmd().Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		if !listed[c.Name()] {
			t.Errorf("the README's command table lacks %s", c.Name())
		}
		for _, sub := range c.Commands() {
			if !sub.Hidden && !listed[c.Name()+" "+sub.Name()] {
				t.Errorf("the README's command table lacks %s %s", c.Name(), sub.Name())
			}
		}
	}
}
