package zktest

import "errors"

// ErrNoModuleRoot is returned when no go.mod is found above the working directory.
var ErrNoModuleRoot = errors.New("zktest: no go.mod above the working directory")
