//go:build !unix

package broker

import "math"

// descriptorLimit: no limit known on this system.
func descriptorLimit() int { return math.MaxInt32 }
