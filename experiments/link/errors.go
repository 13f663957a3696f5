package link

import "errors"

// Errors of the package; each is wrapped with what failed and with what
// input.
var (
	// ErrUnknownNetwork: a NETWORK value that is neither loopback nor a rate.
	ErrUnknownNetwork = errors.New("link: unknown NETWORK value")
	// ErrNeedsRoot: namespaces, veth pairs and qdiscs need root.
	ErrNeedsRoot = errors.New("link: a shaped link needs root")
	// ErrMissingTool: ip or tc (Debian package iproute2) is not installed.
	ErrMissingTool = errors.New("link: missing tool")
	// ErrShaping: tc refused the rate, or set a different one.
	ErrShaping = errors.New("link: tc could not shape the link")
	// ErrSetup: a namespace, the veth pair or an address could not be made.
	ErrSetup = errors.New("link: set-up failed")
)
