// Package netns holds what every family of network-namespace set-ups on
// this machine shares: running a command, running Go code inside a
// namespace, finding and emptying a run's namespaces, and the per-run lock
// that tells a live run from one a crash left behind. The §5 harness's
// links (experiments/link: two hosts and a shaped link) and replication's
// fault tests (kafka/internal/faultnet: hosts on a bridge, cut off with
// iptables, slowed with tc) are two such families; both import this
// package, so that neither the system's tests depend on the experiments
// nor the other way round.
package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Runs is one family of network-namespace set-ups on this machine: every
// namespace of run <id> is named Prefix+<id>+"-"+<host>, and the run is alive
// while a process holds LockDir/<id>.lock. The harness's links are one family
// (experiments/link: krnet-*, /run/krnet); replication's network fault tests
// are another (kafka/internal/faultnet: krft-*, /run/krft). What a run is made
// of differs; how a run is locked, found after a crash, emptied of processes
// and removed is the same, and is here.
type Runs struct {
	Prefix  string // "krnet-"
	LockDir string // "/run/krnet"
	// Teardown removes everything of run id (at least its namespaces).
	Teardown func(ctx context.Context, id string, log *slog.Logger) error
	// Err is the sentinel a failure to lock wraps (the family's ErrSetup).
	Err error
}

// errLocked: another process holds the run's lock (it is alive).
var errLocked = errors.New("netns: run is alive")

// Lock opens and locks LockDir/<id>.lock. With wait it waits for the lock;
// without, it returns errLocked when another process holds it. A lock file
// that a cleaner removed while we waited is opened again. The descriptor is
// close-on-exec, so a child does not keep the run alive.
func (r Runs) Lock(id string, wait bool) (*os.File, error) {
	if err := os.MkdirAll(r.LockDir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", r.Err, err)
	}
	path := filepath.Join(r.LockDir, id+".lock")
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%w: lock %s: %v", r.Err, path, err)
		}
		how := syscall.LOCK_EX
		if !wait {
			how |= syscall.LOCK_NB
		}
		if err := syscall.Flock(int(f.Fd()), how); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, errLocked
			}
			return nil, fmt.Errorf("%w: lock %s: %v", r.Err, path, err)
		}
		var a, b syscall.Stat_t
		if syscall.Fstat(int(f.Fd()), &a) == nil && syscall.Stat(path, &b) == nil && a.Ino == b.Ino {
			fmt.Fprintf(f, "%d\n", os.Getpid())
			return f, nil
		}
		f.Close() // removed or replaced while we waited: take the new one
	}
}

// Release removes run id's lock file (after a teardown that succeeded) and
// closes it.
func (r Runs) Release(lock *os.File, removed bool) {
	if removed {
		_ = os.Remove(lock.Name())
	}
	lock.Close()
}

// Namespaces lists the namespaces of run id that exist, in name order.
func (r Runs) Namespaces(id string) []string { return Namespaces(r.Prefix + id + "-") }

// Namespaces lists the named namespaces (ip netns) whose names start with
// prefix, in name order.
func Namespaces(prefix string) []string {
	var out []string
	ents, _ := os.ReadDir(Dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// CleanStale removes what earlier runs of the family left behind when their
// process died without cleaning up (namespaces, or a lock file, whose lock
// nobody holds any more) and returns the namespaces it removed. Runs still
// alive are left alone.
func (r Runs) CleanStale(ctx context.Context, log *slog.Logger) ([]string, error) {
	ids := map[string]bool{}
	ents, _ := os.ReadDir(Dir)
	for _, e := range ents {
		if rest, ok := strings.CutPrefix(e.Name(), r.Prefix); ok {
			if i := strings.LastIndexByte(rest, '-'); i > 0 {
				ids[rest[:i]] = true
			}
		}
	}
	locks, _ := os.ReadDir(r.LockDir)
	for _, e := range locks {
		if id, ok := strings.CutSuffix(e.Name(), ".lock"); ok {
			ids[id] = true
		}
	}
	var removed []string
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		lock, err := r.Lock(id, false)
		if errors.Is(err, errLocked) {
			continue // a live run
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		left := r.Namespaces(id)
		if len(left) > 0 {
			log.Warn("removing what an earlier run left behind (it ended without cleaning up)", "namespaces", left)
		}
		err = r.Teardown(ctx, id, log)
		if err == nil {
			removed = append(removed, left...)
		}
		r.Release(lock, err == nil)
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
}

// KillAll stops every process inside namespace ns: SIGTERM, up to 10 s to
// exit, then SIGKILL and up to 5 s more.
func KillAll(ctx context.Context, ns string, log *slog.Logger) error {
	var pids []int
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGTERM, 10 * time.Second}, {syscall.SIGKILL, 5 * time.Second}} {
		var err error
		if pids, err = Pids(ctx, ns); err != nil || len(pids) == 0 {
			return err
		}
		log.Info("stopping processes left in the namespace", "netns", ns, "pids", pids, "signal", step.sig.String())
		for _, p := range pids {
			_ = syscall.Kill(p, step.sig)
		}
		for deadline := time.Now().Add(step.wait); time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
			if pids, err = Pids(ctx, ns); err != nil || len(pids) == 0 {
				return err
			}
		}
	}
	return fmt.Errorf("netns: processes %v in %s survived SIGKILL", pids, ns)
}

// Pids lists the processes inside namespace ns (ip netns pids).
func Pids(ctx context.Context, ns string) ([]int, error) {
	out, err := Run(ctx, "ip", "netns", "pids", ns)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if p, err := strconv.Atoi(f); err == nil && p != os.Getpid() {
			pids = append(pids, p)
		}
	}
	return pids, nil
}

// Run runs one ip, tc or iptables command (at most 30 s); a failure quotes
// the command and its standard error.
func Run(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
