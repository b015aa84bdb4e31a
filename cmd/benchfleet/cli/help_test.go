package cli

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every help/<name>.txt begins some command's long help, named by its command
// path (building the tree panics on a name without a file); part-<name>.txt
// are parts several commands share.
func TestLongHelpFiles(t *testing.T) {
	used := map[string]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Long != "" {
			used[c.Long] = c.CommandPath()
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk((&app{}).rootCmd())
	files, err := fs.Glob(helpFiles, "help/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("help files: %v %v", files, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "help/"), ".txt")
		if strings.HasPrefix(name, "part-") { // a part of several (help.go)
			continue
		}
		text, path := longHelp(name), ""
		for long, p := range used { // a long help may go on after its file
			if strings.HasPrefix(long, text) && (path == "" || len(p) < len(path)) {
				path = p
			}
		}
		if path == "" {
			t.Errorf("%s is no command's long help", f)
			continue
		}
		want := strings.ReplaceAll(strings.TrimPrefix(path, "benchfleet "), " ", "-")
		if name != want {
			t.Errorf("%s is the help of %q: name it help/%s.txt", f, path, want)
		}
	}
}
