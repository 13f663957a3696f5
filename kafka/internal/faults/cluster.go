package faults

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/kafkabin"
	"github.com/kafkarepro/kafkarepro/internal/kafkaproc"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// Defaults are the brokers' settings in a fault test, over internal/kafkaproc's (broker.Shipped): ZooKeeper
// on, a short session so that a dead broker is noticed in seconds, and the ISR's lag time a little above
// it. Options.Props override them.
func Defaults() map[string]string {
	return map[string]string{
		"enable.zookeeper":                              "true",
		"zk.sessiontimeout.ms":                          "2000",
		"zk.connectiontimeout.ms":                       "10000",
		"replica.lag.time.max.ms":                       "3000",
		"replica.high.watermark.checkpoint.interval.ms": "500",
	}
}

// Options shape a Cluster.
type Options struct {
	Brokers int               // ids 0..Brokers-1
	Props   map[string]string // server.properties over Defaults
	// ZKConnect is a ZooKeeper the caller started (on a host of its own, say); "" starts one on this
	// machine's loopback (kafka/zk/zktest).
	ZKConnect string
	// Host says where broker id runs and listens (kafkaproc.Options.Host); nil runs every broker here on
	// 127.0.0.1.
	Host func(id int) localsvc.Host
}

// Cluster is ZooKeeper and broker processes, stopped when the test ends. Its methods fail the test on a
// harness error (a broker that does not start); what the cluster does under faults is for the checker.
type Cluster struct {
	t       testing.TB
	bin     string
	dir     string
	ZK      string // the connect string
	zk      *zk.Client
	Brokers []*Broker
}

// Broker is one broker process of a Cluster.
type Broker struct {
	ID   int
	c    *Cluster
	dir  string
	port int
	ovr  map[string]string
	host localsvc.Host
	proc *kafkaproc.Process // the current (or last) process
	up   bool
	runs int
}

// Start builds the kafka command (once per test binary), starts ZooKeeper and the brokers, and stops
// everything when the test ends; if the test failed, the end of every broker's log goes to the test log.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	bin := kafkabin.Build(t)
	connect := o.ZKConnect
	if connect == "" {
		connect = zktest.Start(t)
	}
	zc, err := zk.Connect(connect, 10*time.Second)
	if err != nil {
		t.Fatalf("faults: ZooKeeper %s: %v", connect, err)
	}
	c := &Cluster{t: t, bin: bin, dir: t.TempDir(), ZK: connect, zk: zc}
	t.Cleanup(func() {
		for _, b := range c.Brokers {
			if b.up {
				if err := b.proc.Stop(); err != nil {
					t.Errorf("faults: broker %d did not stop cleanly at the end: %v", b.ID, err)
				}
				b.up = false
			}
		}
		if t.Failed() {
			for _, b := range c.Brokers {
				t.Logf("--- broker %d: %s (last lines)\n%s", b.ID, b.LogPath(), tailLines(b.LogPath(), 60))
			}
		}
		zc.Close()
	})
	props := Defaults()
	maps.Copy(props, o.Props)
	for id := range o.Brokers {
		ovr := maps.Clone(props)
		ovr["brokerid"], ovr["zk.connect"] = strconv.Itoa(id), connect
		b := &Broker{ID: id, c: c, dir: filepath.Join(c.dir, "broker-"+strconv.Itoa(id)), ovr: ovr}
		if o.Host != nil {
			b.host = o.Host(id)
		}
		c.Brokers = append(c.Brokers, b)
		b.Restart()
	}
	return c
}

// ZooKeeper is the test's own ZooKeeper session.
func (c *Cluster) ZooKeeper() *zk.Client { return c.zk }

// Restart starts the broker (again) on the same port and log.dir; its previous output is kept as
// kafka.log.<n>. It does nothing while the broker runs.
func (b *Broker) Restart() {
	b.c.t.Helper()
	if b.up {
		return
	}
	if b.runs > 0 {
		_ = os.Rename(b.LogPath(), b.LogPath()+"."+strconv.Itoa(b.runs))
	}
	p, err := kafkaproc.Start(context.Background(), kafkaproc.Options{Bin: b.c.bin, Dir: b.dir, Port: b.port, Host: b.host, Override: b.ovr})
	if err != nil {
		b.c.t.Fatalf("faults: start broker %d: %v", b.ID, err)
	}
	b.proc, b.port, b.up = p, p.Port(), true
	b.runs++
}

// Kill ends the broker with SIGKILL (kill -9) and waits for it to exit.
func (b *Broker) Kill() time.Time {
	b.c.t.Helper()
	if !b.up {
		b.c.t.Fatalf("faults: broker %d is not running", b.ID)
	}
	at := time.Now()
	_ = b.proc.Kill()
	b.up = false
	return at
}

// Stop shuts the broker down cleanly (SIGTERM) and checks that it did.
func (b *Broker) Stop() {
	b.c.t.Helper()
	if !b.up {
		return
	}
	b.up = false
	if err := b.proc.Stop(); err != nil {
		b.c.t.Fatalf("faults: stop broker %d: %v", b.ID, err)
	}
}

// Pause stops the broker's process with SIGSTOP (it keeps its sockets; its ZooKeeper session lives until
// it times out), Resume continues it.
func (b *Broker) Pause()  { b.signal(syscall.SIGSTOP) }
func (b *Broker) Resume() { b.signal(syscall.SIGCONT) }

func (b *Broker) signal(sig syscall.Signal) {
	b.c.t.Helper()
	if !b.up {
		b.c.t.Fatalf("faults: broker %d is not running", b.ID)
	}
	if err := syscall.Kill(b.proc.Pid(), sig); err != nil {
		b.c.t.Fatalf("faults: %v to broker %d: %v", sig, b.ID, err)
	}
}

// Up reports whether the broker runs (started and not killed or stopped by the test).
func (b *Broker) Up() bool { return b.up }

// Addr is the broker's host:port.
func (b *Broker) Addr() string { return b.proc.Addr() }

// LogDir is the broker's log.dir; LogPath its output.
func (b *Broker) LogDir() string  { return b.proc.LogDir() }
func (b *Broker) LogPath() string { return filepath.Join(b.dir, "kafka.log") }

// Output is everything the broker printed, in all its runs.
func (b *Broker) Output() string {
	var out strings.Builder
	for i := 1; i < b.runs; i++ {
		data, _ := os.ReadFile(b.LogPath() + "." + strconv.Itoa(i))
		out.Write(data)
	}
	data, _ := os.ReadFile(b.LogPath())
	out.Write(data)
	return out.String()
}

// BrokerList is metadata.broker.list for a producer: every broker, "id:host:port,...".
func (c *Cluster) BrokerList() string {
	var parts []string
	for _, b := range c.Brokers {
		parts = append(parts, strconv.Itoa(b.ID)+":"+b.Addr())
	}
	return strings.Join(parts, ",")
}

// Addrs lists the brokers' addresses.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, b := range c.Brokers {
		out = append(out, b.Addr())
	}
	return out
}

// CreateTopic creates a replicated topic and waits until every partition has a leader and a full ISR.
// It first waits until every running broker the assignment names is registered: a broker accepts
// connections (which is what starting it waits for) a moment before its registration is in ZooKeeper, and
// an assignment naming a broker not registered yet is refused.
func (c *Cluster) CreateTopic(topic string, a replication.Assignment) {
	c.t.Helper()
	c.waitRegistered(a)
	if err := replication.CreateTopic(c.zk, topic, a); err != nil {
		c.t.Fatalf("faults: create %s: %v", topic, err)
	}
	for p, rs := range a {
		c.WaitISR(topic, p, len(rs), time.Minute)
	}
}

// waitRegistered waits (at most a minute) until every running broker that a names is in /brokers/ids.
func (c *Cluster) waitRegistered(a replication.Assignment) {
	c.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		live, err := zk.LiveBrokers(c.zk, nil)
		missing := -1
		for _, rs := range a {
			for _, id := range rs {
				if _, ok := live[int(id)]; int(id) < len(c.Brokers) && c.Brokers[id].up && !ok {
					missing = int(id)
				}
			}
		}
		if err == nil && missing < 0 {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("faults: broker %d runs but is not registered in ZooKeeper after a minute (%v)", missing, err)
		}
	}
}

// State reads a partition's state node; the zero State with leader -1 if it cannot.
func (c *Cluster) State(topic string, p int) replication.State {
	s, err := replication.ReadState(c.zk, topic, p)
	if err != nil {
		return replication.State{Leader: -1}
	}
	return s
}

// Leader is the partition's leader as ZooKeeper has it.
func (c *Cluster) Leader(topic string, p int) *Broker {
	c.t.Helper()
	s := c.State(topic, p)
	if s.Leader < 0 || int(s.Leader) >= len(c.Brokers) {
		c.t.Fatalf("faults: %s-%d has no leader (%+v)", topic, p, s)
	}
	return c.Brokers[s.Leader]
}

// WaitISR waits until the partition has a live leader and an ISR of n brokers, and returns when that
// was first seen.
func (c *Cluster) WaitISR(topic string, p, n int, timeout time.Duration) time.Time {
	c.t.Helper()
	var s replication.State
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		s = c.State(topic, p)
		if s.Leader >= 0 && int(s.Leader) < len(c.Brokers) && c.Brokers[s.Leader].up && len(s.ISR) == n {
			return time.Now()
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("faults: %s-%d: no ISR of %d within %v (state %+v)", topic, p, n, timeout, s)
		}
	}
}

// WaitInISR waits until the partition has a live leader and broker id is in its ISR, and returns when
// that was first seen.
func (c *Cluster) WaitInISR(topic string, p, id int, timeout time.Duration) time.Time {
	c.t.Helper()
	var s replication.State
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		s = c.State(topic, p)
		if s.Leader >= 0 && int(s.Leader) < len(c.Brokers) && c.Brokers[s.Leader].up && slices.Contains(s.ISR, int32(id)) {
			return time.Now()
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("faults: %s-%d: broker %d not in the ISR within %v (state %+v)", topic, p, id, timeout, s)
		}
	}
}

// WaitLeaderMoved waits until the partition's leader is neither -1 nor old, and returns when.
func (c *Cluster) WaitLeaderMoved(topic string, p int, old int32, timeout time.Duration) (time.Time, replication.State) {
	c.t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(10 * time.Millisecond) {
		s := c.State(topic, p)
		if s.Leader >= 0 && s.Leader != old {
			return time.Now(), s
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("faults: %s-%d: leader still %d after %v (state %+v)", topic, p, s.Leader, timeout, s)
		}
	}
}

// SegmentBytes concatenates a partition's segment files in a broker's log.dir, in offset order: the
// replica's whole log, for comparing replicas byte for byte once the brokers are stopped.
func (b *Broker) SegmentBytes(topic string, p int) ([]byte, error) {
	dir := filepath.Join(b.LogDir(), topic+"-"+strconv.Itoa(p))
	files, err := filepath.Glob(filepath.Join(dir, "*.kafka"))
	if err != nil {
		return nil, err
	}
	start := func(f string) int64 {
		n, _ := strconv.ParseInt(strings.TrimSuffix(filepath.Base(f), ".kafka"), 10, 64)
		return n
	}
	slices.SortFunc(files, func(a, b string) int { return int(start(a) - start(b)) })
	var out []byte
	for _, f := range files {
		if start(f) != int64(len(out)) {
			return nil, fmt.Errorf("faults: %s starts at %d, the segments before it end at %d", f, start(f), len(out))
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, data...)
	}
	if len(files) == 0 {
		return nil, errors.New("faults: no segment in " + dir)
	}
	return out, nil
}

// LastSegment is the path of a partition's newest segment file in a broker's log.dir.
func (b *Broker) LastSegment(topic string, p int) string {
	b.c.t.Helper()
	files, _ := filepath.Glob(filepath.Join(b.LogDir(), topic+"-"+strconv.Itoa(p), "*.kafka"))
	if len(files) == 0 {
		b.c.t.Fatalf("faults: broker %d has no segment of %s-%d", b.ID, topic, p)
	}
	slices.Sort(files) // names are zero-padded offsets
	return files[len(files)-1]
}

func tailLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// LogSize is the bytes of a partition's segment files in a broker's log.dir (its log end offset once
// what it appended is written out).
func (b *Broker) LogSize(topic string, p int) int64 {
	files, _ := filepath.Glob(filepath.Join(b.LogDir(), topic+"-"+strconv.Itoa(p), "*.kafka"))
	var n int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			n += st.Size()
		}
	}
	return n
}

// WaitSameSize waits until the brokers' files of a partition have the same size (the followers have
// written what the first one has), and returns it.
func (c *Cluster) WaitSameSize(topic string, p int, timeout time.Duration, bs ...*Broker) int64 {
	c.t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		n, same := bs[0].LogSize(topic, p), true
		for _, b := range bs[1:] {
			same = same && b.LogSize(topic, p) == n
		}
		if same && n > 0 {
			return n
		}
		if time.Now().After(deadline) {
			var sizes []int64
			for _, b := range bs {
				sizes = append(sizes, b.LogSize(topic, p))
			}
			c.t.Fatalf("faults: %s-%d: the replicas' files did not reach one size within %v: %v", topic, p, timeout, sizes)
		}
	}
}

// Set changes one of the broker's server.properties for its next start (Restart).
func (b *Broker) Set(key, value string) { b.ovr[key] = value }

// CutTail cuts n bytes off the end of a partition's newest segment file in the broker's log.dir (all of it if
// it is shorter), as a machine that lost power loses what it had not flushed; the broker must not be
// running. It returns how many bytes it cut.
func (b *Broker) CutTail(topic string, p int, n int64) int64 {
	b.c.t.Helper()
	if b.up {
		b.c.t.Fatalf("faults: cutting the log of broker %d while it runs", b.ID)
	}
	seg := b.LastSegment(topic, p)
	st, err := os.Stat(seg)
	if err != nil {
		b.c.t.Fatal(err)
	}
	n = min(n, st.Size())
	if err := os.Truncate(seg, st.Size()-n); err != nil {
		b.c.t.Fatal(err)
	}
	return n
}

// Controller is the id of the broker ZooKeeper names as the controller, -1 if none.
func (c *Cluster) Controller() int {
	id, err := replication.ReadController(c.zk)
	if err != nil {
		return -1
	}
	return int(id)
}

// BrokerEpoch is the broker epoch of broker id's registration now (zk.Broker.Epoch), 0 if it is not
// registered.
func (c *Cluster) BrokerEpoch(id int) int64 {
	live, err := replication.LiveBrokers(c.zk)
	if err != nil {
		return 0
	}
	return live[int32(id)].Epoch
}

// WaitRegisteredAgain waits until broker id is registered with a broker epoch other than old (its earlier
// session has expired and it registered in a new one), and returns the new epoch.
func (c *Cluster) WaitRegisteredAgain(id int, old int64, timeout time.Duration) int64 {
	c.t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		if e := c.BrokerEpoch(id); e != 0 && e != old {
			return e
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("faults: broker %d not registered again within %v (epoch still %d)", id, timeout, c.BrokerEpoch(id))
		}
	}
}
