package netns

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// Dir is where `ip netns add` makes a named namespace's file.
const Dir = "/run/netns"

// InNetns runs fn on an OS thread switched into namespace netns, for the
// sockets fn creates there (a socket stays in the namespace it was made
// in). fn runs on a goroutine of its own, locked to its thread; if the
// thread cannot be switched back, it is discarded with its goroutine.
func InNetns(netns string, fn func() error) error {
	target, err := os.Open(filepath.Join(Dir, netns))
	if err != nil {
		return fmt.Errorf("netns: namespace %s: %w", netns, err)
	}
	defer target.Close()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			done <- fmt.Errorf("netns: this thread's namespace: %w", err)
			return // the thread goes with the goroutine
		}
		defer orig.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("netns: setns %s: %w", netns, err)
			return
		}
		ferr := fn()
		if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- ferr
	}()
	return <-done
}
