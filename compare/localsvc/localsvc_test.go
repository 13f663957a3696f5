package localsvc

import (
	"os"
	"path/filepath"
	"testing"
)

func TestScriptsDir(t *testing.T) {
	dir, err := ScriptsDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"activemq.sh", "rabbitmq.sh"} {
		if _, err := os.Stat(filepath.Join(dir, s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}

func TestDiskUsageCountsAllocatedBlocks(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "a"), make([]byte, 100_000), 0o644); err != nil {
		t.Fatal(err)
	}
	// A sparse file, like a preallocated journal: 32 MiB long, nothing written.
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(32 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	n, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n < 100_000 || n >= 32<<20 {
		t.Fatalf("DiskUsage = %d, want the 100000 written bytes (rounded to blocks), not the sparse length", n)
	}
	if _, err := DiskUsage(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("DiskUsage of a missing directory succeeded")
	}
}

func TestFreePort(t *testing.T) {
	p, err := FreePort()
	if err != nil || p <= 0 || p > 65535 {
		t.Fatalf("FreePort = %d, %v", p, err)
	}
}
