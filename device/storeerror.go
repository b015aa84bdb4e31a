package device

import (
	"errors"
	"fmt"
)

// StoreError: the result store did not serve what a job needs before it
// can run (a wheel of its build): the store refused the connection,
// failed, or sent nothing within the fetch's deadline. It is neither the
// job's fault nor the board's, and no delivery of the job is used for it:
// the worker hands the job back, excused, and says the store is not
// answering.
type StoreError struct{ Err error }

func (e *StoreError) Error() string { return "store not answering: " + e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }

// StoreDown returns a *StoreError.
func StoreDown(format string, args ...any) error {
	return &StoreError{Err: fmt.Errorf(format, args...)}
}

// IsStore reports whether err is a *StoreError.
func IsStore(err error) bool {
	var e *StoreError
	return errors.As(err, &e)
}
