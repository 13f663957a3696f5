package localsvc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/kafkarepro/kafkarepro/compare"
)

// procRoot is where the process files live; tests point it elsewhere.
var procRoot = "/proc"

// ParseProcIO parses the text of /proc/<pid>/io ("rchar: 123" lines) into
// the counters the experiments record: write_bytes, cancelled_write_bytes
// and wchar (Processes is 1). A file without write_bytes or wchar (a
// kernel without task I/O accounting) is an error.
func ParseProcIO(data []byte) (compare.IOCounters, error) {
	c := compare.IOCounters{Processes: 1}
	var seenWB, seenWC bool
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key = strings.TrimSpace(key)
		var dst *int64
		switch key {
		case "write_bytes":
			dst, seenWB = &c.WriteBytes, true
		case "cancelled_write_bytes":
			dst = &c.CancelledWriteBytes
		case "wchar":
			dst, seenWC = &c.WChar, true
		default:
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return compare.IOCounters{}, fmt.Errorf("%w: bad %s value %q", ErrProcIO, key, strings.TrimSpace(val))
		}
		*dst = n
	}
	if !seenWB || !seenWC {
		return compare.IOCounters{}, fmt.Errorf("%w: no write_bytes or wchar line in %q", ErrProcIO, data)
	}
	return c, nil
}

// ProcessIO reads /proc/<pid>/io of one process. Linux sums it over all the
// process's threads, and adds in the counters of children it has reaped.
func ProcessIO(pid int) (compare.IOCounters, error) {
	path := filepath.Join(procRoot, strconv.Itoa(pid), "io")
	data, err := os.ReadFile(path)
	if err != nil {
		return compare.IOCounters{}, fmt.Errorf("%w: read %s: %w", ErrProcIO, path, err)
	}
	c, err := ParseProcIO(data)
	if err != nil {
		return compare.IOCounters{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ProcessTreeIO sums ProcessIO over pid and every live descendant (found by
// the ppid field of /proc/*/stat). The root process must be readable; a
// descendant that exits while we read is left out (ENOENT or ESRCH).
func ProcessTreeIO(pid int) (compare.IOCounters, error) {
	total, err := ProcessIO(pid)
	if err != nil {
		return compare.IOCounters{}, err
	}
	for _, child := range descendants(pid) {
		c, err := ProcessIO(child)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
				continue
			}
			return compare.IOCounters{}, err
		}
		total.WriteBytes += c.WriteBytes
		total.CancelledWriteBytes += c.CancelledWriteBytes
		total.WChar += c.WChar
		total.Processes++
	}
	return total, nil
}

// Pid reads the server's pid file, DIR/<service>.pid, written by
// scripts/<service>.sh start.
func (s *Server) Pid() (int, error) {
	path := filepath.Join(s.Dir, s.Service+".pid")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("localsvc: %s pid: %w", s.Service, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("localsvc: %s pid: bad pid file %s: %q", s.Service, path, b)
	}
	return pid, nil
}

// IOCounters implements compare.ProcessIO: the I/O counters of the server
// process named in its pid file and of all its descendants.
func (s *Server) IOCounters() (compare.IOCounters, error) {
	pid, err := s.Pid()
	if err != nil {
		return compare.IOCounters{}, err
	}
	return ProcessTreeIO(pid)
}
