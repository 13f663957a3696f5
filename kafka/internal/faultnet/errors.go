package faultnet

import "errors"

// Errors of the package, wrapped with what failed with what input.
var (
	ErrNeedsRoot   = errors.New("faultnet: network namespaces need root")
	ErrMissingTool = errors.New("faultnet: missing tool")
	ErrSetup       = errors.New("faultnet: set-up failed")
	ErrUnknownHost = errors.New("faultnet: no such host")
)
