package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// LockFile is the file in a log directory that the broker using it holds an exclusive lock on (flock(2),
// as Kafka's own .lock) for as long as its Manager is open. It holds the holder's process id, host and
// start time, for the error a second broker gets.
const LockFile = ".lock"

// ErrDirLocked: another process holds the log directory's lock (LockFile): two brokers must never share a
// log.dir (each would recover, truncate and mark the other's files).
var ErrDirLocked = errors.New("log: log directory in use by another process")

// dirLock is a held LockFile.
type dirLock struct{ f *os.File }

// lockDir takes dir's lock without waiting, writes who holds it, and returns it; a lock held elsewhere is
// ErrDirLocked naming the holder. Nothing else in dir is touched before the lock is taken.
func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log: open lock file %s: %w", path, err)
	}
	if err := flockExclusive(f); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, fmt.Errorf("%w: %s is locked by %s", ErrDirLocked, path, describeHolder(holder))
		}
		return nil, fmt.Errorf("log: lock %s: %w", path, err)
	}
	host, _ := os.Hostname()
	who := "pid " + strconv.Itoa(os.Getpid()) + " on " + host + " since " + time.Now().UTC().Format(time.RFC3339) + "\n"
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(who), 0)
	}
	return &dirLock{f: f}, nil
}

func describeHolder(data []byte) string {
	s := strings.TrimSpace(string(data))
	if s == "" {
		return "another process (it has not written its name yet)"
	}
	return s
}

// release gives the lock up (closing the file releases the flock). The file stays: removing it would let
// a third process lock a new file while a second still holds the old one.
func (l *dirLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// CheckDirUnlocked reports ErrDirLocked, naming the holder, if another process holds dir's lock now, and
// nil if it does not (or dir does not exist yet). It takes the lock and gives it back: a command calls it
// to refuse early, before it registers anywhere; the Manager takes the lock for good when it opens.
func CheckDirUnlocked(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	l, err := lockDir(dir)
	if err != nil {
		return err
	}
	return l.release()
}
