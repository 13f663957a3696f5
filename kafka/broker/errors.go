package broker

import "errors"

// ErrConfig is wrapped by every configuration error, together with the key,
// the value and the file it came from.
var ErrConfig = errors.New("broker: bad configuration")
