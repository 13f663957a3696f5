package activemq

import "errors"

// ErrSpec reports an unusable ProduceSpec or ConsumeSpec.
var ErrSpec = errors.New("activemq: bad spec")
