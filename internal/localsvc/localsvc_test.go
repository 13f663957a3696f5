package localsvc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

func TestParseKV(t *testing.T) {
	kv := parseKV("noise\nlog=/a/b.log\n data=/d \nconnect=127.0.0.1:2181\n")
	if kv["log"] != "/a/b.log" || kv["data"] != "/d" || kv["connect"] != "127.0.0.1:2181" || len(kv) != 3 {
		t.Errorf("parseKV = %v", kv)
	}
}

// fakeScripts writes scripts/<name>.sh that follows the scripts' interface:
// start prints log= (and fails when DIR/fail exists), stop leaves DIR/stopped.
func fakeScripts(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/bash
case "$1" in
start) echo "noise"; echo "log=$2/server.log"
       if [ -e "$2/fail" ]; then echo "address in use" >&2; exit 1; fi ;;
stop) touch "$2/stopped" ;;
version) echo "9.9.9" ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, name+".sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestStartFromAndStop(t *testing.T) {
	scripts := fakeScripts(t, "fake")
	dir := t.TempDir()
	s, err := StartFrom(context.Background(), scripts, "fake", dir, 12345)
	if err != nil {
		t.Fatal(err)
	}
	ep := s.Endpoint()
	if ep.Port != 12345 || ep.LogPath != dir+"/server.log" || ep.DataDir != dir || ep.Version != "9.9.9" {
		t.Errorf("endpoint = %+v", ep)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "stopped")); err != nil {
		t.Errorf("Stop did not run the script's stop: %v", err)
	}
}

// A failed start wraps ErrStart, names the log and the script's complaint,
// and runs stop to clean up.
func TestStartFromFailure(t *testing.T) {
	scripts := fakeScripts(t, "fake")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fail"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := StartFrom(context.Background(), scripts, "fake", dir, 12345)
	if !errors.Is(err, ErrStart) || !strings.Contains(err.Error(), "server.log") || !strings.Contains(err.Error(), "in use") {
		t.Errorf("err = %v, want ErrStart naming server.log and the script's stderr", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "stopped")); err != nil {
		t.Errorf("a failed start did not run stop: %v", err)
	}
	if _, err := StartFrom(context.Background(), scripts, "nosuch", dir, 1); err == nil {
		t.Error("a service without a script started")
	}
}

// A start that lost its port says so in the script's words or in RabbitMQ's; nothing else is a lost port.
func TestPortTaken(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("rabbitmq.sh: start: AMQP port 36821 is already in use"), true},
		{errors.New(`{listen_error,{acceptor,{127,0,0,1},36821},eaddrinuse}`), true},
		{errors.New("activemq.sh: start: the broker exited"), false},
	} {
		if got := PortTaken(c.err); got != c.want {
			t.Errorf("PortTaken(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// A start whose port was taken is tried again on another port in a new folder, at most three times; any
// other failure is not retried.
func TestStartOnFreePortRetriesATakenPort(t *testing.T) {
	scripts := fakeScripts(t, "fake")
	var dirs []string
	newDir := func(fail int) func() (string, error) {
		return func() (string, error) {
			d := t.TempDir()
			if len(dirs) < fail {
				if err := os.WriteFile(filepath.Join(d, "fail"), nil, 0o644); err != nil {
					return "", err
				}
			}
			dirs = append(dirs, d)
			return d, nil
		}
	}
	s, err := StartOnFreePort(context.Background(), Host{}, scripts, "fake", time.Minute, newDir(2))
	if err != nil || len(dirs) != 3 || s.Dir != dirs[2] {
		t.Fatalf("two taken ports, then a start: %d attempts, server %+v, err %v", len(dirs), s, err)
	}
	dirs = nil
	if _, err := StartOnFreePort(context.Background(), Host{}, scripts, "fake", time.Minute, newDir(5)); !PortTaken(err) || len(dirs) != 3 {
		t.Errorf("ports always taken: %d attempts, err %v; want 3 and the last error", len(dirs), err)
	}
	dirs = nil
	if _, err := StartOnFreePort(context.Background(), Host{}, scripts, "nosuch", time.Minute, newDir(0)); err == nil || len(dirs) != 1 {
		t.Errorf("a failure other than a taken port: %d attempts, err %v; want 1", len(dirs), err)
	}
}
