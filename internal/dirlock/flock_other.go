//go:build !unix

package dirlock

import (
	"errors"
	"os"
)

// Elsewhere the lock is not enforced.
var errWouldBlock = errors.New("would block")

func tryLock(*os.File) error { return nil }

func unlock(*os.File) error { return nil }
