package experiments

import "errors"

// ErrShort is recorded when an adapter returns without error but with fewer
// messages than asked.
var ErrShort = errors.New("experiments: test ended early")
