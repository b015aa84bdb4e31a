// Package yamlerr turns YAML decoding errors into messages for the person
// who wrote the file: they name the line and the key or value, never a Go
// type ("field slot not found in type cli.workerFile" becomes
// `line 4: unknown key "slot"`).
package yamlerr

import (
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
