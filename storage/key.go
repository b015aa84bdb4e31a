package storage

import (
	"fmt"
	"strings"
)

// CheckKey returns ErrInvalidKey (wrapped, naming the key) unless key is a
// clean relative slash path: not empty, no leading slash, no empty, "." or
// ".." segments, no backslashes or control characters.
func CheckKey(key string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrInvalidKey, key, why) }
	if key == "" {
		return bad("empty")
	}
	if len(key) > 1024 {
		return bad("longer than 1024 bytes")
	}
	if strings.HasPrefix(key, "/") {
		return bad("absolute")
	}
	if strings.ContainsAny(key, "\\\x00") {
		return bad("contains a backslash or NUL")
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return bad("contains a control character")
		}
	}
	for _, seg := range strings.Split(key, "/") {
		switch seg {
		case "":
			return bad("has an empty segment")
		case ".", "..":
			return bad("has a . or .. segment")
		}
	}
	return nil
}
