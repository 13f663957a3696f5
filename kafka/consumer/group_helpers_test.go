package consumer

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// Helpers of the integration tests: real ZooKeeper (zktest), in-process brokers registered in it, and group
// members either in process or as separate processes of kafka/internal/testconsumer.

// testBroker is where one of the test's brokers listens; in-process brokers (brokertest) carry their handle,
// broker processes (startBrokerProcess) do not.
type testBroker struct {
	id       int
	hostPort string
	*brokertest.Broker
}

// startBroker runs broker id with topic "t" (and any other) at 4 partitions, flushing every 20 ms so that
// consumers see messages quickly (§3.1: only flushed messages are exposed).
func startBroker(t *testing.T, zkc string, id int) *testBroker {
	t.Helper()
	b := brokertest.Start(t, id, brokertest.Options{ZKConnect: zkc, Props: map[string]string{
		"num.partitions": "4", "log.flush.interval": "1000", "log.default.flush.interval.ms": "20",
		"zk.sessiontimeout.ms": "2000",
	}})
	return &testBroker{id: id, hostPort: b.HostPort(), Broker: b}
}

// newProducer returns a sync producer over a static broker list.
func newProducer(t *testing.T, bs ...*testBroker) *producer.SyncProducer {
	t.Helper()
	var list []string
	for _, b := range bs {
		list = append(list, fmt.Sprintf("%d:%s", b.id, b.hostPort))
	}
	cfg := producer.DefaultConfig()
	cfg.BrokerList = strings.Join(list, ",")
	p, err := producer.NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// produceAll sends n messages "<prefix>-<i>" spread over partitions 0..3 of every broker given.
func produceAll(t *testing.T, p *producer.SyncProducer, topic, prefix string, n int, bs ...*testBroker) []string {
	t.Helper()
	var sent []string
	for i := range n {
		b := bs[i%len(bs)]
		part := int32((i / len(bs)) % 4)
		msg := fmt.Sprintf("%s-%d", prefix, i)
		if err := p.SendTo(b.id, topic, part, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, msg)
	}
	return sent
}

// waitFor polls cond every 20 ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// rawZK is a plain client for inspecting the tree.
func rawZK(t *testing.T, connect string) *gozk.Conn {
	t.Helper()
	c, _, err := gozk.Connect([]string{connect}, 5*time.Second, gozk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// owners returns partition → owner stream id of a group's topic.
func owners(c *gozk.Conn, group, topic string) map[string]string {
	out := map[string]string{}
	kids, _, err := c.Children(zk.OwnersPath(group, topic))
	if err != nil {
		return out
	}
	for _, k := range kids {
		if d, _, err := c.Get(zk.OwnerPath(group, topic, k)); err == nil {
			out[k] = string(d)
		}
	}
	return out
}

// balanced reports whether the group's owners are exactly Algorithm 1's assignment for the live members.
func balanced(c *gozk.Conn, group, topic string, wantParts int) bool {
	ids, _, err := c.Children(zk.ConsumerIDsPath(group))
	if err != nil || len(ids) == 0 {
		return false
	}
	var streams []string
	for _, id := range ids {
		d, _, err := c.Get(zk.ConsumerIDPath(group, id))
		if err != nil {
			return false
		}
		n := 0
		fmt.Sscanf(strings.TrimPrefix(string(d), `{"`+topic+`":`), "%d", &n)
		for i := range n {
			streams = append(streams, id+"-"+strconv.Itoa(i))
		}
	}
	own := owners(c, group, topic)
	if len(own) != wantParts {
		return false
	}
	parts := make([]string, 0, len(own))
	for p := range own {
		parts = append(parts, p)
	}
	for _, a := range AssignRange(parts, streams) {
		for _, p := range a.Partitions {
			if own[p] != a.Stream {
				return false
			}
		}
	}
	return true
}

// tree lists every node under root except /zookeeper, with its data and whether it is ephemeral.
func tree(c *gozk.Conn, root string, out map[string]string) {
	kids, _, err := c.Children(root)
	if err != nil {
		return
	}
	for _, k := range kids {
		p := strings.TrimSuffix(root, "/") + "/" + k
		if p == "/zookeeper" {
			continue
		}
		d, st, err := c.Get(p)
		if err != nil {
			continue
		}
		kind := "P"
		if st.EphemeralOwner != 0 {
			kind = "E"
		}
		out[p] = kind + " " + string(d)
		tree(c, p, out)
	}
}

// testConsumerBin builds kafka/internal/testconsumer into the test's temporary directory (the build cache
// makes the second time cheap).
func testConsumerBin(t *testing.T) string {
	t.Helper()
	if bin := testConsumerBins[t.Name()]; bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "testconsumer")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/kafkarepro/kafkarepro/kafka/internal/testconsumer").CombinedOutput()
	if err != nil {
		t.Fatalf("go build testconsumer: %v\n%s", err, out)
	}
	testConsumerBins[t.Name()] = bin
	return bin
}

// testConsumerBins remembers each test's build; tests using it do not run in parallel.
var testConsumerBins = map[string]string{}

// proc is a group member running as its own process.
type proc struct {
	cmd *exec.Cmd
	out string // file holding its stdout
	id  string // consumer id, from its READY line
}

// fastProps are the short timeouts of these tests.
const fastProps = "zk.sessiontimeout.ms=2000,zk.synctime.ms=200,autocommit.interval.ms=100," +
	"fetcher.backoff.ms=20,rebalance.retries.max=30,autooffset.reset=smallest"

func startProc(t *testing.T, zkc, group, topics string) *proc {
	t.Helper()
	dir := t.TempDir()
	p := &proc{out: filepath.Join(dir, "out")}
	f, err := os.Create(p.out)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(testConsumerBin(t), "-zookeeper", zkc, "-group", group, "-topics", topics, "-props", fastProps)
	p.cmd.Stdout = f
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ready := make(chan string, 1)
	errPath := filepath.Join(dir, "err")
	if d := os.Getenv("GROUP_TEST_LOGS"); d != "" { // keep the members' logs for a look
		errPath = filepath.Join(d, fmt.Sprintf("member-%d.log", time.Now().UnixNano()))
	}
	errLog, _ := os.Create(errPath)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if id, ok := strings.CutPrefix(line, "READY "); ok {
				ready <- id
			}
			fmt.Fprintln(errLog, line)
		}
		errLog.Close()
	}()
	t.Cleanup(func() { p.kill() })
	select {
	case p.id = <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("consumer process did not start; see %s", filepath.Join(dir, "err"))
	}
	return p
}

func (p *proc) kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
	}
}

func (p *proc) term() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
}

// delivery is one output line of a member: (partition, offset) and payload.
type delivery struct {
	part    string
	off     int64
	payload string
}

func readOut(t *testing.T, file string) []delivery {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []delivery
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) != 5 {
			continue
		}
		off, _ := strconv.ParseInt(f[2], 10, 64)
		out = append(out, delivery{part: f[1], off: off, payload: f[4]})
	}
	return out
}

// missing lists the sent messages absent from got.
func missing(sent []string, got map[string]int) []string {
	var m []string
	for _, s := range sent {
		if got[s] == 0 {
			m = append(m, s)
		}
	}
	sort.Strings(m)
	return m
}
