package experiments

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
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

// DescribeMachine gathers the machine description; dataDir is where the
// servers keep their data. Missing pieces are left empty, never fatal.
func DescribeMachine(dataDir string) Machine {
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
