package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"time"
)

// checkStrict walks data as one JSON document shaped like t and enforces
// what encoding/json does not: exactly one value with nothing after it
// (not even a stray '}' or ']'), no key twice in any object, and every key
// of a struct spelled exactly as its json tag (encoding/json would also
// accept "POOL" for "pool"). Keys of maps are free; values are checked
// by the decoder and by Validate.
//
// It first walks the bytes directly (strictFast: encoding/json's Token
// stream allocates per token, and every claim pays for this check); a document
// that walk cannot read as JSON is walked again by tokens, so its error is
// encoding/json's own. FuzzCheckStrict holds the two walks to the same
// answer on every input.
func checkStrict(data []byte, t reflect.Type) error {
	if err, ok := strictFast(data, t); ok {
		return err
	}
	return checkStrictTokens(data, t)
}

// checkStrictTokens is checkStrict by encoding/json's token stream.
func checkStrictTokens(data []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walkStrict(dec, t, ""); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	unmarshalType = reflect.TypeFor[json.Unmarshaler]()
)

// strictShape is the shape a value of type t is walked with: pointers
// followed, and nil (any shape) for types that decode themselves
// (Duration, time.Time), whose own UnmarshalJSON judges the value.
func strictShape(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (t == timeType || reflect.PointerTo(t).Implements(unmarshalType)) {
		return nil
	}
	return t
}

// objectShape is what an object shaped like t allows: the fields of a
// struct (any other key is unknown), or the element type of a map's values
// (keys free); both nil for any shape.
func objectShape(t reflect.Type) (fields map[string]reflect.Type, elem reflect.Type) {
	if t != nil && t.Kind() == reflect.Struct {
		return jsonFields(t), nil
	}
	if t != nil && t.Kind() == reflect.Map {
		return nil, t.Elem()
	}
	return nil, nil
}

// arrayElem is the element type of an array shaped like t (nil: any).
func arrayElem(t reflect.Type) reflect.Type {
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		return t.Elem()
	}
	return nil
}

// walkStrict reads one value shaped like t (nil: any shape).
func walkStrict(dec *json.Decoder, t reflect.Type, path string) error {
	t = strictShape(t)
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		fields, elem := objectShape(t)
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			key, ok := kt.(string)
			if !ok {
				return fmt.Errorf("object key %v is not a string", kt)
			}
			if seen[key] {
				return duplicateKey(key, path)
			}
			seen[key] = true
			ft := elem
			if fields != nil {
				if ft, ok = fields[key]; !ok {
					return unknownField(key, path)
				}
			}
			if err := walkStrict(dec, ft, path+key+"."); err != nil {
				return err
			}
		}
		_, err := dec.Token() // '}'
		return err
	case json.Delim('['):
		elem := arrayElem(t)
		for dec.More() {
			if err := walkStrict(dec, elem, path); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ']'
		return err
	}
	return nil
}

// The errors both walks return, word for word.
func duplicateKey(key, path string) error {
	return fmt.Errorf("duplicate key %q in %s", key, objectName(path))
}

func unknownField(key, path string) error {
	return fmt.Errorf("unknown field %q in %s (keys are case-sensitive)", key, objectName(path))
}

func objectName(path string) string {
	if path == "" {
		return "the document"
	}
	return strings.TrimSuffix(path, ".")
}

// fieldsCache holds jsonFields' maps by type: a job's walk asks for the
// same few types on every claim. The maps are never written after caching.
var fieldsCache sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields maps the json names of t's exported fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldsCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	defer func() { fieldsCache.Store(t, out) }()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
