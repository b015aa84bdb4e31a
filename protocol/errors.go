package protocol

import (
	"errors"
	"fmt"
)

// ErrInvalid is matched (errors.Is) by every decoding and validation error of
// this package.
var ErrInvalid = errors.New("invalid")

// FieldError says which field of a document broke which rule.
type FieldError struct {
	// Field is the JSON path of the field, e.g. "benchmark.batch_size".
	Field string
	// Rule says what the value must be, e.g. "must be a positive integer".
	Rule string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Rule) }

// Is makes every FieldError match ErrInvalid.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Rule: fmt.Sprintf(format, args...)}
}

// decodeError wraps a JSON decoding failure so that it matches ErrInvalid.
type decodeError struct {
	kind string
	err  error
}

func (e *decodeError) Error() string { return fmt.Sprintf("decode %s: %v", e.kind, e.err) }
func (e *decodeError) Unwrap() error { return e.err }
func (e *decodeError) Is(target error) bool {
	return target == ErrInvalid
}
