package containers

import "errors"

// Errors of the containers provider.
var (
	ErrNoDocker       = errors.New("containers: Docker is not available")
	ErrNoImage        = errors.New("containers: image missing")
	ErrUnknownService = errors.New("containers: unknown service")
	ErrStart          = errors.New("containers: server did not start")
)
