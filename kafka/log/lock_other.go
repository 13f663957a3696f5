//go:build !unix

package log

import (
	"errors"
	"os"
)

var errWouldBlock = errors.New("log: lock held")

// flockExclusive is a no-op where flock(2) does not exist: the log directory is not locked there.
func flockExclusive(*os.File) error { return nil }
