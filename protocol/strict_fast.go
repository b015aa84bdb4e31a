package protocol

import (
	"encoding/json"
	"errors"
	"reflect"
)

// strictFast is checkStrict's walk straight over the bytes, on the
// validator's scanner (jsonvalid.go). ok is false when data is not valid
// JSON up to the point the walk reached: then the caller walks it again by
// tokens for encoding/json's error. When ok, err is exactly what the token
// walk returns (nil, a duplicate key, an unknown field, trailing data).
func strictFast(data []byte, t reflect.Type) (err error, ok bool) {
	w := strictWalker{jsonValidator: jsonValidator{data: data}}
	w.space()
	if err, ok := w.walk(t, "", 0); !ok || err != nil {
		return err, ok
	}
	w.space()
	if w.i != len(data) {
		return errors.New("trailing data after the JSON object"), true
	}
	return nil, true
}

type strictWalker struct {
	jsonValidator
}

// walk reads one value shaped like t (nil: any shape), as walkStrict does.
func (w *strictWalker) walk(t reflect.Type, path string, depth int) (error, bool) {
	t = strictShape(t)
	if w.i >= len(w.data) {
		return nil, false
	}
	switch w.data[w.i] {
	case '{':
		return w.object(t, path, depth+1)
	case '[':
		return w.array(t, path, depth+1)
	}
	return nil, w.value(depth)
}

func (w *strictWalker) object(t reflect.Type, path string, depth int) (error, bool) {
	if depth > maxJSONDepth {
		return nil, false
	}
	fields, elem := objectShape(t)
	var seen []string // a job's objects have a handful of keys
	w.i++             // {
	w.space()
	if w.i < len(w.data) && w.data[w.i] == '}' {
		w.i++
		return nil, true
	}
	for {
		if w.i >= len(w.data) || w.data[w.i] != '"' {
			return nil, false
		}
		start := w.i
		if !w.str() {
			return nil, false
		}
		key, ok := jsonKey(w.data[start:w.i])
		if !ok {
			return nil, false
		}
		for _, k := range seen {
			if k == key {
				return duplicateKey(key, path), true
			}
		}
		seen = append(seen, key)
		ft := elem
		if fields != nil {
			if ft, ok = fields[key]; !ok {
				return unknownField(key, path), true
			}
		}
		w.space()
		if w.i >= len(w.data) || w.data[w.i] != ':' {
			return nil, false
		}
		w.i++
		w.space()
		if err, ok := w.walk(ft, path+key+".", depth); !ok || err != nil {
			return err, ok
		}
		w.space()
		if w.i >= len(w.data) {
			return nil, false
		}
		switch w.data[w.i] {
		case ',':
			w.i++
			w.space()
		case '}':
			w.i++
			return nil, true
		default:
			return nil, false
		}
	}
}

func (w *strictWalker) array(t reflect.Type, path string, depth int) (error, bool) {
	if depth > maxJSONDepth {
		return nil, false
	}
	elem := arrayElem(t)
	w.i++ // [
	w.space()
	if w.i < len(w.data) && w.data[w.i] == ']' {
		w.i++
		return nil, true
	}
	for {
		if err, ok := w.walk(elem, path, depth); !ok || err != nil {
			return err, ok
		}
		w.space()
		if w.i >= len(w.data) {
			return nil, false
		}
		switch w.data[w.i] {
		case ',':
			w.i++
			w.space()
		case ']':
			w.i++
			return nil, true
		default:
			return nil, false
		}
	}
}

// jsonKey is the string a quoted key token decodes to. Plain ASCII keys
// (all of benchfleet's) are the bytes between the quotes; any other is
// decoded by encoding/json, which unescapes it and replaces invalid UTF-8
// as the token walk does.
func jsonKey(tok []byte) (string, bool) {
	raw := tok[1 : len(tok)-1]
	for _, c := range raw {
		if c == '\\' || c >= 0x80 {
			var s string
			if err := json.Unmarshal(tok, &s); err != nil {
				return "", false
			}
			return s, true
		}
	}
	return string(raw), true
}
