package link

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/kafkarepro/kafkarepro/internal/netns"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needRoot skips a test that makes namespaces unless it may.
func needRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("makes network namespaces (skipped with -short)")
	}
	if err := Check(); err != nil {
		t.Skipf("cannot make a link here: %v", err)
	}
}

// testID is a run id unique to this test process and tag.
func testID(tag string) string { return tag + strconv.Itoa(os.Getpid()%1_000_000) }

// linkUp creates a link of spec for the test, removed when it ends.
func linkUp(t *testing.T, tag string, spec Spec) *Link {
	t.Helper()
	l, err := Create(t.Context(), spec, Options{ID: testID(tag)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// leftovers lists what of run id is still on the machine: namespaces (ip
// netns list), interfaces in the root namespace (ip link) and the lock file.
func leftovers(t *testing.T, id string) []string {
	t.Helper()
	s, c := Names(id)
	var left []string
	netns, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	links, err := exec.Command("ip", "link").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{s.Netns, c.Netns} {
		if strings.Contains(string(netns), name) {
			left = append(left, "netns "+name)
		}
	}
	for _, name := range []string{s.Iface, c.Iface} {
		if strings.Contains(string(links), name) {
			left = append(left, "link "+name)
		}
	}
	if _, err := os.Stat(filepath.Join(lockDir, id+".lock")); err == nil {
		left = append(left, "lock "+id)
	}
	return left
}

func TestIntegration_CreateClose(t *testing.T) {
	needRoot(t)
	id := testID("c")
	spec, _ := Parse("1gbit")
	l, err := Create(t.Context(), spec, Options{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	if got := leftovers(t, id); len(got) != 3 { // two namespaces and the lock; no interface in the root namespace
		t.Errorf("after Create: %q, want both namespaces and the lock, and no veth in the root namespace", got)
	}
	for _, e := range []End{l.Server, l.Client} {
		out, err := exec.Command("tc", "-n", e.Netns, "qdisc", "show", "dev", e.Iface).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "tbf") || !strings.Contains(string(out), "rate 1Gbit") {
			t.Errorf("qdisc of %s in %s: %s %v, want tbf rate 1Gbit", e.Iface, e.Netns, out, err)
		}
		// Nothing but the veth and lo: no route out of the namespace.
		out, _ = exec.Command("ip", "-n", e.Netns, "route", "show", "default").CombinedOutput()
		if strings.TrimSpace(string(out)) != "" {
			t.Errorf("%s has a default route: %s", e.Netns, out)
		}
	}
	if l.Framing.MTU != 1500 || !l.Framing.Timestamps {
		t.Logf("framing %+v (not the veth default; the capacity follows it)", l.Framing)
	}
	// A process left running in the server host is stopped by Close.
	sleeper := exec.Command("ip", append(l.Server.Exec()[1:], "sleep", "600")...)
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	waitPids(t, l.Server.Netns, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sleeper.Wait(); err == nil {
		t.Error("the process in the server namespace was not stopped")
	}
	if got := leftovers(t, id); len(got) > 0 {
		t.Errorf("after Close: %q left behind", got)
	}
	if err := l.Close(); err == nil {
		t.Error("a second Close did not say the link is gone")
	}
}

// alive reports whether pid runs (a zombie waiting for its parent to
// reap it does not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || !strings.HasPrefix(string(stat[i+1:]), " Z")
}

// waitPids waits until namespace ns holds at least n processes.
func waitPids(t *testing.T, ns string, n int) {
	t.Helper()
	for range 100 {
		if pids, _ := netns.Pids(t.Context(), ns); len(pids) >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no process appeared in %s", ns)
}

// The rate tc refuses (less than one byte per second) and one it accepts
// but cannot represent (10000tbit: it stores a bucket of 0 bytes): a clear error, and
// nothing left behind.
func TestIntegration_RateTCRefuses(t *testing.T) {
	needRoot(t)
	for i, rate := range []string{"1bit", "10000tbit"} {
		spec, err := Parse(rate)
		if err != nil {
			t.Fatal(err)
		}
		id := testID("r" + strconv.Itoa(i))
		l, err := Create(t.Context(), spec, Options{ID: id})
		if err == nil {
			l.Close()
			t.Fatalf("NETWORK=%s: Create succeeded", rate)
		}
		if !errors.Is(err, ErrShaping) || !strings.Contains(err.Error(), rate) {
			t.Errorf("NETWORK=%s: %v, want ErrShaping naming the rate", rate, err)
		}
		t.Logf("NETWORK=%s: %v", rate, err)
		if got := leftovers(t, id); len(got) > 0 {
			t.Errorf("NETWORK=%s: %q left behind", rate, got)
		}
	}
}

// TestHelperCrashedRun is not a test: run with KRNET_HELPER=<id>, it
// creates a link, starts a process in its server host, says "ready" and
// waits to be killed, as a crashed run would leave things.
func TestHelperCrashedRun(t *testing.T) {
	id := os.Getenv("KRNET_HELPER")
	if id == "" {
		t.Skip("helper process for TestIntegration_StaleRunCleaned")
	}
	spec, _ := Parse("100mbit")
	l, err := Create(t.Context(), spec, Options{ID: id})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if err := exec.Command("ip", append(l.Server.Exec()[1:], "sleep", "600")...).Start(); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	waitPids(t, l.Server.Netns, 1)
	fmt.Println("ready")
	time.Sleep(10 * time.Minute)
}

// A run killed with SIGKILL leaves its namespaces, veth pair and a process
// in the server host; the next Create removes them all, and a live run's
// are left alone.
func TestIntegration_StaleRunCleaned(t *testing.T) {
	needRoot(t)
	spec, _ := Parse("100mbit")
	live := linkUp(t, "l", spec)

	dead := testID("d")
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperCrashedRun$", "-test.v")
	helper.Env = append(os.Environ(), "KRNET_HELPER="+dead)
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.Contains(sc.Text(), "ready") {
		if strings.Contains(sc.Text(), "error:") {
			t.Fatal(sc.Text())
		}
	}
	s, _ := Names(dead)
	pids, err := netns.Pids(t.Context(), s.Netns)
	if err != nil || len(pids) != 1 {
		t.Fatalf("pids in the crashed run's server host: %v, %v", pids, err)
	}
	_ = helper.Process.Kill()
	_ = helper.Wait()
	if got := leftovers(t, dead); len(got) < 2 {
		t.Fatalf("the killed run left %q; want its namespaces still there", got)
	}

	next, err := Create(t.Context(), spec, Options{ID: testID("n")})
	if err != nil {
		t.Fatal(err)
	}
	if err := next.Close(); err != nil {
		t.Fatal(err)
	}
	if got := leftovers(t, dead); len(got) > 0 {
		t.Errorf("after the next run: %q of the crashed run still there", got)
	}
	if alive(pids[0]) {
		t.Errorf("the crashed run's process %d still runs", pids[0])
	}
	if got := leftovers(t, live.ID); len(got) != 3 {
		t.Errorf("the live run's namespaces were touched: %q", got)
	}
}

// The link is shaped both ways: over about a second, neither direction
// carries more of a TCP stream than Framing.StreamBytesPerSec at the rate
// allows, plus tbf's bucket. (How close a transfer comes to it depends on
// what else the machine is doing; it is logged, not asserted.)
func TestIntegration_Shaped(t *testing.T) {
	needRoot(t)
	spec, _ := Parse("100mbit")
	l := linkUp(t, "s", spec)
	limit := l.Framing.StreamBytesPerSec(spec.BitsPerSec)
	for _, dir := range []string{"client to server", "server to client"} {
		var ln net.Listener
		if err := netns.InNetns(l.Server.Netns, func() (err error) {
			ln, err = net.Listen("tcp", net.JoinHostPort(l.Server.Addr, "0"))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var conn net.Conn
		accepted := make(chan net.Conn, 1)
		go func() { c, _ := ln.Accept(); accepted <- c }()
		if err := netns.InNetns(l.Client.Netns, func() (err error) {
			conn, err = net.Dial("tcp", ln.Addr().String())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		srv := <-accepted
		ln.Close()
		sender, receiver := conn, srv
		if dir == "server to client" {
			sender, receiver = srv, conn
		}
		go func() {
			buf := make([]byte, 64<<10)
			for {
				if _, err := sender.Write(buf); err != nil {
					return
				}
			}
		}()
		// Skip the first bucketful, then count for a second.
		if _, err := io.CopyN(io.Discard, receiver, l.BurstBytes); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_ = receiver.SetReadDeadline(start.Add(time.Second))
		n, _ := io.Copy(io.Discard, receiver)
		secs := time.Since(start).Seconds()
		sender.Close()
		receiver.Close()
		rate := float64(n) / secs
		t.Logf("%s: %.0f bytes/s of stream, %.1f%% of the %.0f the link carries at %s", dir, rate, 100*rate/limit, limit, spec)
		if float64(n) > limit*secs*1.02+float64(l.BurstBytes) {
			t.Errorf("%s: %.0f bytes/s, more than the link's %.0f: not shaped", dir, rate, limit)
		}
		if n == 0 {
			t.Errorf("%s: nothing arrived", dir)
		}
	}
}
