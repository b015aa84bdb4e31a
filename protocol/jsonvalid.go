package protocol

// validJSON reports whether data is one valid JSON value (with surrounding
// whitespace), exactly as encoding/json.Valid does (FuzzValidJSON checks
// that), faster: a direct descent over the bytes instead of the standard
// scanner's state function per byte. DecodeResult runs it on every
// document before its fast decoder, which is lax about the syntax of
// fields it skips.
func validJSON(data []byte) bool {
	v := jsonValidator{data: data}
	v.space()
	if !v.value(0) {
		return false
	}
	v.space()
	return v.i == len(data)
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

type jsonValidator struct {
	data []byte
	i    int
}

func (v *jsonValidator) space() {
	for v.i < len(v.data) {
		switch v.data[v.i] {
		case ' ', '\t', '\n', '\r':
			v.i++
		default:
			return
		}
	}
}

func (v *jsonValidator) value(depth int) bool {
	if v.i >= len(v.data) {
		return false
	}
	switch c := v.data[v.i]; {
	case c == '{':
		return v.object(depth + 1)
	case c == '[':
		return v.array(depth + 1)
	case c == '"':
		return v.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return v.number()
	case c == 't':
		return v.literal("true")
	case c == 'f':
		return v.literal("false")
	case c == 'n':
		return v.literal("null")
	}
	return false
}

func (v *jsonValidator) literal(lit string) bool {
	if len(v.data)-v.i < len(lit) || string(v.data[v.i:v.i+len(lit)]) != lit {
		return false
	}
	v.i += len(lit)
	return true
}

func (v *jsonValidator) object(depth int) bool {
	if depth > maxJSONDepth {
		return false
	}
	v.i++ // {
	v.space()
	if v.i < len(v.data) && v.data[v.i] == '}' {
		v.i++
		return true
	}
	for {
		if v.i >= len(v.data) || v.data[v.i] != '"' || !v.str() {
			return false
		}
		v.space()
		if v.i >= len(v.data) || v.data[v.i] != ':' {
			return false
		}
		v.i++
		v.space()
		if !v.value(depth) {
			return false
		}
		v.space()
		if v.i >= len(v.data) {
			return false
		}
		switch v.data[v.i] {
		case ',':
			v.i++
			v.space()
		case '}':
			v.i++
			return true
		default:
			return false
		}
	}
}

func (v *jsonValidator) array(depth int) bool {
	if depth > maxJSONDepth {
		return false
	}
	v.i++ // [
	v.space()
	if v.i < len(v.data) && v.data[v.i] == ']' {
		v.i++
		return true
	}
	for {
		if !v.value(depth) {
			return false
		}
		v.space()
		if v.i >= len(v.data) {
			return false
		}
		switch v.data[v.i] {
		case ',':
			v.i++
			v.space()
		case ']':
			v.i++
			return true
		default:
			return false
		}
	}
}

// str consumes a string starting at its opening quote. Like encoding/json's
// scanner it accepts any byte from 0x20 up (UTF-8 is not checked here) and
// the escapes \" \\ \/ \b \f \n \r \t \uXXXX.
func (v *jsonValidator) str() bool {
	d := v.data
	i := v.i + 1
	for i < len(d) {
		for i < len(d) && plainStringByte[d[i]] {
			i++
		}
		if i >= len(d) {
			return false
		}
		c := d[i]
		switch {
		case c == '"':
			v.i = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			i++
			if i >= len(d) {
				return false
			}
			switch d[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if len(d)-i < 5 {
					return false
				}
				for _, h := range d[i+1 : i+5] {
					if !isHex(h) {
						return false
					}
				}
				i += 5
			default:
				return false
			}
		default:
			i++
		}
	}
	return false
}

// plainStringByte marks the bytes a string holds as they are: not a quote,
// a backslash or a control character.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number consumes -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (v *jsonValidator) number() bool {
	d := v.data
	i := v.i
	if d[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i >= len(d) {
		return false
	}
	if d[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	v.i = i
	return true
}
