package local

import (
	"errors"

	"github.com/kafkarepro/kafkarepro/internal/localsvc"
)

// Errors of the local provider. ErrNoRepo is localsvc's, so either name
// matches with errors.Is.
var (
	ErrUnknownService = errors.New("local: unknown service")
	ErrStart          = errors.New("local: server did not start")
	ErrNoRepo         = localsvc.ErrNoRepo
)
