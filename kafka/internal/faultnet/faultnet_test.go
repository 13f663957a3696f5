package faultnet

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/netns"
)

func TestCreateRefusesBadNames(t *testing.T) {
	ctx := context.Background()
	for _, id := range []string{"UP", "has-dash", "eightchr", "../x"} {
		if _, err := Create(ctx, id, []string{"a"}, nil, nil); !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), id) {
			t.Errorf("Create(id %q) = %v, want ErrSetup naming the id", id, err)
		}
	}
	if _, err := Create(ctx, "x1", nil, nil, nil); !errors.Is(err, ErrSetup) {
		t.Errorf("Create with no hosts = %v, want ErrSetup", err)
	}
}

func TestDecodeRefusesWhatIsNotAHostList(t *testing.T) {
	for _, s := range []string{"", "{}", `{"id":"x","bridge":"krft-x-br"}`, `{"id":"x","bridge":"krnet-x","hosts":[{"name":"a"}]}`, "not json"} {
		if _, err := Decode(s); err == nil {
			t.Errorf("Decode(%q) accepted it", s)
		}
	}
	n := &Net{ID: "ab1", Bridge: Prefix + "ab1-br", Hosts: []Host{{Name: "zk", Netns: Prefix + "ab1-zk", Addr: "10.202.0.10"}}}
	back, err := Decode(n.Encode())
	if err != nil || back.Hosts[0] != n.Hosts[0] || back.Bridge != n.Bridge {
		t.Fatalf("Decode(Encode()) = %+v, %v", back, err)
	}
	if err := back.Close(); err == nil {
		t.Error("a decoded Net removed the namespaces; only their creator may")
	}
	if _, err := back.Host("b9"); !errors.Is(err, ErrUnknownHost) {
		t.Errorf("Host(b9) = %v, want ErrUnknownHost", err)
	}
}

// A run that died without Close leaves its namespaces and the processes in them; the next Create (through
// CleanStale) stops those processes and removes the namespaces, and leaves a live run's alone.
func TestIntegration_CleanStaleRemovesACrashedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("network namespaces (skipped with -short)")
	}
	if err := Check(); err != nil {
		t.Skipf("needs root and ip, tc, iptables: %v", err)
	}
	ctx := context.Background()
	id := "c" + strconv.Itoa(os.Getpid()%100000)
	crashed, err := Create(ctx, id, []string{"a", "b"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := crashed.Host("a")
	sleeper := exec.Command("ip", append(a.Exec()[1:], "sleep", "600")...)
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = sleeper.Wait(); close(done) }()
	// ip switches namespace and then execs sleep: wait until the process is inside.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if pids, _ := netns.Pids(ctx, a.Netns); slices.Contains(pids, sleeper.Process.Pid) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep (pid %d) not in %s after 10 s", sleeper.Process.Pid, a.Netns)
		}
	}
	// The crash: the lock goes with the process, the namespaces and the sleeper stay.
	crashed.lock.Close()
	crashed.lock = nil

	live, err := Create(ctx, id+"l", []string{"a"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	// Create ran CleanStale: the crashed run's namespaces are gone, its process stopped.
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = sleeper.Process.Signal(syscall.SIGKILL)
		t.Error("the crashed run's process still runs")
	}
	for _, ns := range []string{crashed.Bridge, a.Netns} {
		if _, err := os.Stat(filepath.Join(netns.Dir, ns)); err == nil {
			t.Errorf("namespace %s of the crashed run is still there", ns)
		}
	}
	if _, err := os.Stat(filepath.Join(lockDir, id+".lock")); err == nil {
		t.Errorf("the crashed run's lock file is still there")
	}
	removed, err := CleanStale(ctx, nil)
	if err != nil || len(removed) != 0 {
		t.Errorf("CleanStale with one live run = %v, %v; want nothing removed", removed, err)
	}
	if got := namespaces(live.ID); !slices.Contains(got, live.Bridge) || len(got) != 2 {
		t.Errorf("the live run's namespaces are %v, want its bridge and host a", got)
	}
}
