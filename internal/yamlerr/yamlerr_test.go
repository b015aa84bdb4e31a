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

// Messages name the line and key, never a Go type.
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

// A syntax error names the line the problem is on, not
// the line of the mapping or list it is in (the parent key's).
func TestCleanSourceNamesTheOffendingLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// A key indented less than its siblings.
		{"defaults:\n  pool: cpu\n model: mlp\n", "line 3: did not find expected key"},
		// A list item inside a mapping.
		{"run: x\ndefaults:\n  pool: cpu\n  - model: mlp\n", "line 4: did not find expected key"},
		// An unclosed flow mapping.
		{"run: x\ndefaults:\n  pool: cpu\n  labels: {a: b\n  model: mlp\n", "line 4: did not find expected ',' or '}'"},
		// A key at the list's indent among its items.
		{"matrix:\n  benchmark:\n    - model: mlp\n    batch_size: 8\n    - model: x\n", "line 4: did not find expected '-' indicator"},
		// A tab.
		{"run: x\ndefaults:\n  pool: cpu\n\tmodel: mlp\n", "line 4: found a tab character that violates indentation"},
		// Already right: stays right.
		{"run: x\ndefaults:\n  pool: cpu\n  model: mlp\n    batch_size: 8\n", "line 5: mapping values are not allowed in this context"},
	} {
		var d any
		dec := yaml.NewDecoder(strings.NewReader(c.in))
		dec.KnownFields(true)
		err := CleanSource([]byte(c.in), dec.Decode(&d))
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %s", c.in, err, c.want)
		}
	}
	// Type errors are Clean's.
	var d doc
	if err := CleanSource([]byte("name: x\nslot: 3\n"), yaml.Unmarshal([]byte("name: x\nslot: 3\n"), &d)); err != nil {
		t.Errorf("no error expected without KnownFields: %v", err)
	}
	dec := yaml.NewDecoder(strings.NewReader("name: x\nslot: 3\n"))
	dec.KnownFields(true)
	if err := CleanSource([]byte("name: x\nslot: 3\n"), dec.Decode(&d)); err == nil || err.Error() != `line 2: unknown key "slot"` {
		t.Errorf("type error: %v", err)
	}
}
