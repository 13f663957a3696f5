package hotpath

import "errors"

// ErrUnknown is returned by Lookup for a name that is not a path.
var ErrUnknown = errors.New("hotpath: unknown path")
