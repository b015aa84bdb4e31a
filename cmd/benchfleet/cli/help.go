package cli

import (
	"embed"
	"strings"
)

// The long help of each command is a text file, help/<command path>.txt
// (e.g. help/results-gate.txt), embedded in the binary: prose is kept out
// of the code that parses and calls. TestLongHelpFiles checks that every
// file is used and every name has a file.
//
//go:embed help
var helpFiles embed.FS

// longHelp is the text of help/<name>.txt.
func longHelp(name string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("cli: no help/" + name + ".txt")
	}
	return strings.TrimSuffix(string(b), "\n")
}

// Parts of several commands' long help (help/part-<name>.txt).
var (
	gateHelp     = longHelp("part-gate")
	notifyHelp   = longHelp("part-notify")
	gateExitHelp = longHelp("part-gate-exit")
)
