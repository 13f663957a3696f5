//go:build unix

package broker

import (
	"math"
	"syscall"
)

// descriptorLimit is the process's soft RLIMIT_NOFILE (prlimit(1) may
// change it while the broker runs).
func descriptorLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(rl.Cur)
}
