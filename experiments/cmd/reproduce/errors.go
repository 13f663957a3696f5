package main

import "errors"

// ErrNoContainers is returned by --services containers when the containers
// provider is not built in.
var ErrNoContainers = errors.New("reproduce: the containers provider is not available")
