package kafka_test

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/kafkabin"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// descLimit is the descriptor limit the test gives the broker (prlimit).
const descLimit = 256

// TestIntegration_Descriptors is docs/ROBUSTNESS.md's descriptor test against the
// broker binary, its RLIMIT_NOFILE lowered to 256 with prlimit once it
// runs. A normal producer (from 127.0.0.2) and consumer (127.0.0.3) work
// throughout, each operation timed, and must each be answered within a
// second, while
//
//   - one address (127.0.0.1) opens 300 idle connections: 50 are kept
//     (max.connections.per.ip=50), the rest refused, and a new client from
//     another address still gets in;
//   - 250 addresses open 400 more: the broker stops at max.connections=0's
//     limit (256 less a reserve of 64) and refuses the rest, without
//     running out of descriptors;
//   - the idle ones are closed after connections.max.idle.ms=3000.
//
// A second broker, its max.connections set past the descriptor limit, is
// then flooded until accept fails: it keeps serving the producer and the
// consumer it has, and logs the failure once per interval, not per try.
func TestIntegration_Descriptors(t *testing.T) {
	needRoot(t)
	bin := kafkabin.Build(t)
	t.Run("limits", func(t *testing.T) { descriptorLimits(t, bin) })
	t.Run("exhaustion", func(t *testing.T) { descriptorExhaustion(t, bin) })
}

func startLimited(t *testing.T, bin string, lines ...string) *serverProcess {
	t.Helper()
	sp := startServer(t, bin, writeProps(t, filepath.Join(t.TempDir(), "logs"), lines...))
	lim := strconv.Itoa(descLimit)
	if out, err := exec.Command("prlimit", "--pid", strconv.Itoa(sp.cmd.Process.Pid), "--nofile="+lim+":"+lim).CombinedOutput(); err != nil {
		t.Fatalf("prlimit: %v: %s", err, out)
	}
	return sp
}

// dialSrc connects to addr from a loopback address of the test's choosing
// (127.0.0.0/8 is all loopback on Linux).
func dialSrc(src, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 2 * time.Second}
	return d.Dial("tcp", addr)
}

// normalClients are a producer and a consumer timing every operation.
type normalClients struct {
	t        *testing.T
	stop     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	ops      int
	slowest  time.Duration
	failures []string
}

// startNormalClients connects a producer from 127.0.0.2 and a consumer
// from 127.0.0.3 and runs them until stop: every 50 ms the producer sends
// a set and makes a round trip, and the consumer fetches.
func startNormalClients(t *testing.T, addr string) *normalClients {
	nc := &normalClients{t: t, stop: make(chan struct{})}
	prod := dialRawFrom(t, "127.0.0.2", addr)
	cons := dialRawFrom(t, "127.0.0.3", addr)
	set := message.AppendV0(nil, []byte("a normal message"))
	run := func(name string, op func() error) {
		defer nc.wg.Done()
		for {
			select {
			case <-nc.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			t0 := time.Now()
			err := op()
			d := time.Since(t0)
			nc.mu.Lock()
			nc.ops++
			nc.slowest = max(nc.slowest, d)
			if err != nil || d > time.Second {
				nc.failures = append(nc.failures, fmt.Sprintf("%s: %v after %v", name, err, d))
			}
			nc.mu.Unlock()
		}
	}
	nc.wg.Add(2)
	go run("producer", func() error {
		if err := prod.produceRaw("normal", 0, set); err != nil {
			return err
		}
		_, _, err := prod.call(protocol.OffsetsRequest{Topic: "normal", Time: -1, MaxNumOffsets: 1})
		return err
	})
	go run("consumer", func() error {
		code, _, err := cons.call(protocol.FetchRequest{Topic: "normal", Offset: 0, MaxSize: 64 << 10})
		if err == nil && code != protocol.ErrNone {
			err = code
		}
		return err
	})
	return nc
}

// check stops the clients and fails if an operation failed or took more
// than a second; it returns how many there were and the slowest.
func (nc *normalClients) check() (int, time.Duration) {
	close(nc.stop)
	nc.wg.Wait()
	if len(nc.failures) > 0 {
		nc.t.Errorf("%d of %d operations of the normal producer and consumer failed or took over 1s: %s",
			len(nc.failures), nc.ops, strings.Join(nc.failures[:min(5, len(nc.failures))], "; "))
	}
	return nc.ops, nc.slowest
}

func dialRawFrom(t *testing.T, src, addr string) *rawClient {
	t.Helper()
	c, err := dialSrc(src, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{t: t, c: c, r: bufio.NewReader(c)}
}

// flood opens n connections to addr from the given source addresses in
// turn and keeps them open (idle) until the test closes them; it returns
// how many the broker closed within a moment (refused).
func flood(t *testing.T, addr string, srcs []string, n int) (conns []net.Conn, refused int) {
	t.Helper()
	for i := range n {
		c, err := dialSrc(srcs[i%len(srcs)], addr)
		if err != nil {
			continue // the listen backlog is full: refused as well
		}
		conns = append(conns, c)
	}
	// A refused connection is closed by the broker within a second (it waits that long for the client's
	// first request, to answer it with error 8): a read sees EOF.
	return conns, n - stillOpen(conns, 1500*time.Millisecond)
}

// stillOpen counts the connections the broker has not closed within wait.
func stillOpen(conns []net.Conn, wait time.Duration) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	open := 0
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(wait))
			var b [1]byte
			if _, err := c.Read(b[:]); err == nil || isTimeout(err) {
				mu.Lock()
				open++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return open
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

func descriptorLimits(t *testing.T, bin string) {
	sp := startLimited(t, bin, "max.connections.per.ip=50", "connections.max.idle.ms=3000")
	pid := sp.cmd.Process.Pid
	base := openDescriptors(t, pid)
	nc := startNormalClients(t, sp.addr)

	// One address, 300 connections: 50 kept.
	one, refusedOne := flood(t, sp.addr, []string{"127.0.0.1"}, 300)
	defer closeAll(one)
	fdsOne := openDescriptors(t, pid)
	if kept := 300 - refusedOne; kept != 50 {
		t.Errorf("from one address: %d connections kept, want 50 (max.connections.per.ip)", kept)
	}
	newcomer := dialRawFrom(t, "127.0.0.4", sp.addr)
	if _, _, err := newcomer.call(protocol.OffsetsRequest{Topic: "normal", Time: -1, MaxNumOffsets: 1}); err != nil {
		t.Errorf("a new client from another address was not served: %v", err)
	}

	// 250 addresses, 400 connections: the total stops at 256 - 64.
	var srcs []string
	for i := range 250 {
		srcs = append(srcs, fmt.Sprintf("127.0.1.%d", i+1))
	}
	many, refusedMany := flood(t, sp.addr, srcs, 400)
	defer closeAll(many)
	fdsMany := openDescriptors(t, pid)
	limit := descLimit - 64
	if fdsMany > descLimit-16 {
		t.Errorf("%d descriptors open under the flood, the limit is %d", fdsMany, descLimit)
	}
	// Open now, up to the limit: the producer and the consumer (busy every 50 ms), and of the idle ones
	// (the 50 from one address, the newcomer, the flood's) those that were not closed to let a newer one in
	// at the limit.
	if open := 2 + stillOpen(append(append(one, many...), newcomer.c), 100*time.Millisecond); open != limit {
		t.Errorf("%d connections kept in all, want the limit %d", open, limit)
	}

	// Idle connections are closed after 3 s.
	time.Sleep(3500 * time.Millisecond)
	fdsIdle := openDescriptors(t, pid)
	ops, slowest := nc.check()
	if fdsIdle > base+8 {
		t.Errorf("%d descriptors open after the idle timeout, %d before the flood", fdsIdle, base)
	}
	t.Logf("RLIMIT_NOFILE %d: %d descriptors at start; 300 connections from one address: %d refused, %d descriptors open; "+
		"400 more from 250 addresses: %d refused, %d descriptors open (connection limit %d); %d after connections.max.idle.ms; "+
		"normal producer and consumer: %d operations, the slowest %v (load %s)",
		descLimit, base, refusedOne, fdsOne, refusedMany, fdsMany, limit, fdsIdle, ops, slowest.Round(time.Millisecond), loadAverage())
}

func descriptorExhaustion(t *testing.T, bin string) {
	sp := startLimited(t, bin, "max.connections=100000")
	pid := sp.cmd.Process.Pid
	nc := startNormalClients(t, sp.addr)
	var srcs []string
	for i := range 250 {
		srcs = append(srcs, fmt.Sprintf("127.0.2.%d", i+1))
	}
	start := time.Now()
	conns, refused := flood(t, sp.addr, srcs, 400)
	time.Sleep(2 * time.Second) // accept keeps failing meanwhile
	fds := openDescriptors(t, pid)
	held := time.Since(start)
	ops, slowest := nc.check()
	closeAll(conns)
	lines := strings.Count(sp.log(), "accept failed")
	if fds < descLimit-2 {
		t.Errorf("only %d descriptors open: the flood did not exhaust the limit of %d", fds, descLimit)
	}
	if want := int(held/(5*time.Second)) + 2; lines < 1 || lines > want {
		t.Errorf("%d 'accept failed' lines in %v, want 1 to %d (one per 5 s):\n%s", lines, held, want, sp.log())
	}
	// Once the flood is gone, new clients get in again.
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var c net.Conn
		if c, err = dialSrc("127.0.0.5", sp.addr); err == nil {
			rc := &rawClient{t: t, c: c, r: bufio.NewReader(c)}
			_, _, err = rc.call(protocol.OffsetsRequest{Topic: "normal", Time: -1, MaxNumOffsets: 1})
			c.Close()
			if err == nil {
				break
			}
		}
	}
	if err != nil {
		t.Errorf("no new client served after the flood closed: %v", err)
	}
	t.Logf("RLIMIT_NOFILE %d, max.connections=100000: 400 connections from 250 addresses, %d refused or shed, %d descriptors open; "+
		"%d 'accept failed' lines in %v; normal producer and consumer: %d operations, the slowest %v (load %s)",
		descLimit, refused, fds, lines, held.Round(time.Millisecond), ops, slowest.Round(time.Millisecond), loadAverage())
}
