package rabbitmq

import "errors"

// ErrSpec reports an unusable ProduceSpec or ConsumeSpec.
var ErrSpec = errors.New("rabbitmq: bad spec")
