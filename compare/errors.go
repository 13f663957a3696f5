package compare

import "errors"

// ErrNoProcessIO means a server's process I/O counters cannot be read here
// (e.g. it runs in a container).
var ErrNoProcessIO = errors.New("compare: the server's process I/O counters are not available")
