package localsvc

import "errors"

// Errors of localsvc.
var (
	// ErrNoRepo means no go.mod of module ModulePath was found above the working directory.
	ErrNoRepo = errors.New("localsvc: cannot find the root of module " + ModulePath)
	// ErrNoScripts means the module root has no scripts/ directory.
	ErrNoScripts = errors.New("localsvc: scripts/ not found")
	// ErrStart means a script's start command failed; the error names the server's log when the
	// script printed it.
	ErrStart = errors.New("localsvc: start script failed")
)

// ErrProcIO means a /proc/<pid>/io file could not be read or parsed.
var ErrProcIO = errors.New("localsvc: process I/O counters")
