package yamlerr

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type doc struct {
	Name  string   `yaml:"name"`
	Count int      `yaml:"count"`
	Pools []string `yaml:"pools"`
}

// Issue 12, item 11: messages name the line and key, never a Go type.
func TestCleanNamesNoGoTypes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"name: x\nslot: 3\n", `line 2: unknown key "slot"`},
		{"count: many\n", `line 1: value "many" is not an integer`},
		{"pools: cpu\n", `line 1: value "cpu" is not a list`},
	} {
		var d doc
		dec := yaml.NewDecoder(strings.NewReader(c.in))
		dec.KnownFields(true)
		err := Clean(dec.Decode(&d))
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %s", c.in, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "yamlerr.doc") {
			t.Errorf("%q: names a Go type: %v", c.in, err)
		}
	}
}
