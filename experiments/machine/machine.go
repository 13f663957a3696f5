package machine

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kafkarepro/kafkarepro/experiments/figure"
)

// Machine describes where a run took place, to set beside the paper's two
// machines (8 cores at 2 GHz, 16 GB, 6-disk RAID 10, 1 Gb link).
type Machine struct {
	CPUModel  string  `json:"cpu_model"`
	Cores     int     `json:"cores"`
	MemoryGB  float64 `json:"memory_gb"`
	Kernel    string  `json:"kernel"`
	Disk      string  `json:"disk"` // df and lsblk of the data directory
	GoVersion string  `json:"go_version"`
	Hostname  string  `json:"hostname"`
	Network   string  `json:"network"`
}

// Describe gathers the machine description; dataDir is where the
// servers keep their data. Missing pieces are left empty, never fatal.
func Describe(dataDir string) Machine {
	m := Machine{
		Cores:     runtime.NumCPU(),
		GoVersion: runtime.Version(),
		Network:   "loopback (client and servers on this one machine)",
	}
	m.Hostname, _ = os.Hostname()
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	if mhz := procField("/proc/cpuinfo", "cpu MHz"); mhz != "" {
		m.CPUModel += " @ " + mhz + " MHz"
	}
	if kb := procField("/proc/meminfo", "MemTotal"); kb != "" {
		var n float64
		for _, c := range strings.Fields(kb)[0] {
			n = n*10 + float64(c-'0')
		}
		m.MemoryGB = float64(int(n/1024/1024*10)) / 10
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Machine[:])
	}
	if dataDir != "" {
		df := command("df", "-hT", dataDir)
		src := command("findmnt", "-n", "-o", "SOURCE", "--target", dataDir)
		lsblk := ""
		if src != "" && strings.HasPrefix(src, "/dev/") {
			lsblk = command("lsblk", "-d", "-o", "NAME,SIZE,ROTA,MODEL", src)
		}
		m.Disk = strings.TrimSpace(df + "\n" + lsblk)
	}
	return m
}

// procField returns the value of the first "key : value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// command runs a short informational command and returns its output, or ""
// if it is missing or fails.
func command(name string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// Load is what else the machine was doing at one moment: the 1, 5 and
// 15-minute load averages (/proc/loadavg) and the size of the page cache
// (Cached in /proc/meminfo). A wall-clock figure means little without them
// on a shared machine, and a virtual machine's writes may slow down as its
// page cache grows (docs/PERFORMANCE.md, "The machine").
type Load struct {
	Avg1        float64 `json:"load1"`
	Avg5        float64 `json:"load5"`
	Avg15       float64 `json:"load15"`
	PageCacheMB int64   `json:"page_cache_mb"`
}

// ReadLoad reads the load now; a missing file leaves its fields zero.
func ReadLoad() Load {
	var l Load
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			l.Avg1, _ = strconv.ParseFloat(f[0], 64)
			l.Avg5, _ = strconv.ParseFloat(f[1], 64)
			l.Avg15, _ = strconv.ParseFloat(f[2], 64)
		}
	}
	if kb := strings.Fields(procField("/proc/meminfo", "Cached")); len(kb) > 0 {
		n, _ := strconv.ParseInt(kb[0], 10, 64)
		l.PageCacheMB = n / 1024
	}
	return l
}

// String is "load average: 1.20, 0.90, 0.70, page cache 1,696 MB".
func (l Load) String() string {
	return fmt.Sprintf("load average: %.2f, %.2f, %.2f, page cache %s MB", l.Avg1, l.Avg5, l.Avg15, figure.Commas(float64(l.PageCacheMB)))
}

// DropPageCache writes back dirty pages and drops the machine's clean page
// cache (sync, then 1 into /proc/sys/vm/drop_caches; root only), so that a
// measurement starts from a known page-cache state.
func DropPageCache() error {
	unix.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0o200); err != nil {
		return fmt.Errorf("experiments: drop the page cache (needs root): %w", err)
	}
	return nil
}

// Resident is how much of the files under dir is in the page cache, by
// mincore(2) over a read-only mapping of each: the page-cache state of the
// bytes a consumer test is about to read, which the machine's page-cache
// total does not tell (a guest running DAMON's pageout scheme pages out
// page cache untouched for about a minute).
func Resident(dir string) (resident, total int64, err error) {
	page := int64(os.Getpagesize())
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil || st.Size() == 0 {
			return err
		}
		m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("experiments: mmap %s: %w", path, err)
		}
		defer unix.Munmap(m)
		vec := make([]byte, (st.Size()+page-1)/page)
		// x/sys has no wrapper for mincore(2); the system call takes the
		// mapping's address and length and fills one byte per page.
		if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			return fmt.Errorf("experiments: mincore %s: %w", path, e)
		}
		for _, v := range vec {
			if v&1 != 0 {
				resident += page
			}
		}
		total += st.Size()
		return nil
	})
	return min(resident, total), total, err
}
