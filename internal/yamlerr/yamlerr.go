// Package yamlerr turns YAML decoding errors into messages for the person
// who wrote the file: they name the line and the key or value, never a Go
// type ("field slot not found in type cli.workerFile" becomes
// `line 4: unknown key "slot"`).
package yamlerr

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

var (
	unknownField = regexp.MustCompile(`^(line \d+: )?field (\S+) not found in type \S+$`)
	cannotDecode = regexp.MustCompile("^(line \\d+: )?cannot unmarshal !!(\\w+) `(.*)` into (\\S+)$")
	goType       = regexp.MustCompile(` in type \S+`)
)

// Clean rewrites err when it is a *yaml.TypeError (the decoder's errors
// about keys and values); other errors are returned as they are.
func Clean(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	msgs := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		msgs = append(msgs, cleanOne(e))
	}
	return errors.New(strings.Join(msgs, "; "))
}

func cleanOne(e string) string {
	if m := unknownField.FindStringSubmatch(e); m != nil {
		return fmt.Sprintf("%sunknown key %q", m[1], m[2])
	}
	if m := cannotDecode.FindStringSubmatch(e); m != nil {
		return fmt.Sprintf("%s%s %q is not %s", m[1], kind(m[2]), m[3], want(m[4]))
	}
	return goType.ReplaceAllString(e, "")
}

func kind(tag string) string {
	switch tag {
	case "str":
		return "value"
	case "seq":
		return "list"
	case "map":
		return "mapping"
	default:
		return tag
	}
}

// want names what a Go type expects, in YAML words.
func want(goT string) string {
	switch {
	case strings.HasPrefix(goT, "[]"):
		return "a list"
	case strings.HasPrefix(goT, "map["):
		return "a mapping"
	case strings.HasPrefix(goT, "int"), strings.HasPrefix(goT, "uint"):
		return "an integer"
	case strings.HasPrefix(goT, "float"):
		return "a number"
	case goT == "bool":
		return "true or false"
	case goT == "string":
		return "a string"
	default:
		return "of the expected kind"
	}
}

// syntaxLine matches the line a YAML syntax error names.
var syntaxLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// CleanSource is Clean for an error from decoding data, with a syntax
// error's line corrected: the decoder names the line of the mapping or
// list the problem is in (often the parent key's line, and one off), not
// the line the problem is on. The line given is the first line of data
// whose text, read up to and including it, fails to parse the same way.
func CleanSource(data []byte, err error) error {
	var te *yaml.TypeError
	if err == nil || errors.As(err, &te) {
		return Clean(err)
	}
	m := syntaxLine.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	if n := offendingLine(data, err.Error()); n > 0 {
		return fmt.Errorf("line %d: %s", n, m[2])
	}
	return fmt.Errorf("line %s: %s", m[1], m[2])
}

// offendingLine finds, by bisection, the fewest leading lines of data that
// fail to parse with message msg (0 when none does). Parsing stops at the
// problem, so every prefix holding the problem's line fails with msg, and
// a shorter one either parses or fails otherwise (at its end).
func offendingLine(data []byte, msg string) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	failsSame := func(n int) bool {
		var node yaml.Node
		err := yaml.Unmarshal(bytes.Join(lines[:n], nil), &node)
		return err != nil && err.Error() == msg
	}
	if !failsSame(len(lines)) {
		return 0
	}
	lo, hi := 0, len(lines) // failsSame(hi); the answer is in (lo, hi]
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if failsSame(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
