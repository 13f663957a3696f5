package broker

import (
	"errors"
	"syscall"
)

// isTemporary reports accept errors worth retrying: running out of file
// descriptors or memory, or a connection reset before it was accepted.
func isTemporary(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ECONNRESET)
}
