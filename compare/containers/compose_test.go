package containers

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/compare/activemq"
	"github.com/kafkarepro/kafkarepro/compare/rabbitmq"
	"github.com/kafkarepro/kafkarepro/internal/kafkabin"
)

// compose runs Compose for one project of docker-compose.yml through
// scripts/compose.sh, which picks docker compose (v2 plugin) or
// docker-compose (v1), as it does for a user.
type compose struct {
	t       *testing.T
	argv    []string // command and global flags
	dir     string
	env     []string
	project string
}

func newCompose(t *testing.T, repo, project string, env map[string]string) *compose {
	t.Helper()
	c := &compose{t: t, dir: repo, project: project, env: os.Environ()}
	script := filepath.Join(repo, "scripts", "compose.sh")
	which, err := exec.Command("bash", script, "--which").CombinedOutput()
	if err != nil {
		t.Skipf("%s", strings.TrimSpace(string(which)))
	}
	t.Logf("compose: %s (chosen by scripts/compose.sh)", strings.TrimSpace(string(which)))
	c.argv = []string{"bash", script, "-p", project, "-f", filepath.Join(repo, "docker-compose.yml")}
	for k, v := range env {
		c.env = append(c.env, k+"="+v)
	}
	return c
}

func (c *compose) run(args ...string) string {
	c.t.Helper()
	cmd := exec.Command(c.argv[0], append(c.argv[1:], args...)...)
	cmd.Dir, cmd.Env = c.dir, c.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("%s %s: %v\n%s", strings.Join(c.argv, " "), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// leftovers lists the project's containers, volumes and networks.
func (c *compose) leftovers() []string {
	var left []string
	filter := "label=com.docker.compose.project=" + c.project
	for _, kind := range [][]string{{"ps", "-a"}, {"volume", "ls"}, {"network", "ls"}} {
		out, err := exec.Command("docker", append(kind, "-q", "--filter", filter)...).Output()
		if err != nil {
			c.t.Errorf("docker %v: %v", kind, err)
		}
		for _, id := range strings.Fields(string(out)) {
			left = append(left, kind[0]+" "+id)
		}
	}
	return left
}

// waitHealthy waits until every container of the project reports healthy.
func (c *compose) waitHealthy(timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ids := strings.Fields(c.run("ps", "-q"))
		out, err := exec.Command("docker", append([]string{"inspect", "-f", "{{.Name}} {{.State.Health.Status}}"}, ids...)...).Output()
		if err == nil && len(ids) > 0 && strings.Count(string(out), " healthy") == len(ids) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("containers not healthy after %s:\n%s%s", timeout, out, c.run("logs", "--tail", "20"))
		}
		time.Sleep(time.Second)
	}
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestIntegration_Compose brings up docker-compose.yml (ZooKeeper, the
// three-broker cluster, ActiveMQ, RabbitMQ), produces and consumes through
// the cluster with our console tools and a consumer group of two, stops one
// broker and checks that the group rebalances and goes on with nothing
// lost, and that `down -v` leaves no container, volume or network behind.
func TestIntegration_Compose(t *testing.T) {
	repo := requireImages(t)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	ports := map[string]string{}
	for _, k := range []string{"ZK_PORT", "KAFKA_0_PORT", "KAFKA_1_PORT", "KAFKA_2_PORT", "ACTIVEMQ_STOMP_PORT", "ACTIVEMQ_OPENWIRE_PORT", "RABBITMQ_PORT"} {
		ports[k] = strconv.Itoa(freePort(t))
	}
	c := newCompose(t, repo, fmt.Sprintf("kafkarepro-test-%d", os.Getpid()), ports)
	t.Cleanup(func() { // if the test stopped early
		if left := c.leftovers(); len(left) > 0 {
			exec.Command(c.argv[0], append(c.argv[1:], "down", "-v", "--remove-orphans", "-t", "5")...).Run()
		}
	})

	began := time.Now()
	c.run("up", "-d")
	c.waitHealthy(5 * time.Minute)
	t.Logf("compose up, all healthy in %s", time.Since(began).Round(time.Second))

	bin := kafkabin.Build(t)
	zkAddr := "127.0.0.1:" + ports["ZK_PORT"]
	conn, _, err := zk.Connect([]string{zkAddr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	waitZK := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(90 * time.Second); !cond(); time.Sleep(250 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	children := func(path string) []string {
		kids, _, err := conn.Children(path)
		if err != nil {
			return nil
		}
		slices.Sort(kids)
		return kids
	}
	waitZK("three brokers in /brokers/ids", func() bool { return slices.Equal(children("/brokers/ids"), []string{"0", "1", "2"}) })

	const topic, group = "compose-test", "compose-group"
	produce := func(from, to int) {
		t.Helper()
		var in strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&in, "message-%05d\n", i)
		}
		// Small batches: each PRODUCE request goes to one randomly chosen
		// partition, and the test wants every broker to get some.
		cmd := exec.CommandContext(ctx, bin, "console-producer", "--zookeeper", zkAddr, "--topic", topic, "--batch-size", "5")
		cmd.Stdin = strings.NewReader(in.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("console-producer: %v\n%s", err, out)
		}
	}
	// Two consumers of one group (§3.2): each partition goes to one of them.
	var outs []string
	for i := range 2 {
		out := filepath.Join(t.TempDir(), fmt.Sprintf("consumer-%d.out", i))
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "console-consumer", "--zookeeper", zkAddr, "--topic", topic, "--group", group, "--from-beginning")
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); f.Close() })
		outs = append(outs, out)
	}
	received := func() (distinct, total int) {
		seen := map[string]bool{}
		for _, out := range outs {
			f, err := os.Open(out)
			if err != nil {
				continue
			}
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "message-") {
					seen[sc.Text()] = true
					total++
				}
			}
			f.Close()
		}
		return len(seen), total
	}

	produce(0, 300)
	waitZK("the topic on all three brokers", func() bool { return len(children("/brokers/topics/"+topic)) == 3 })
	waitZK("300 messages consumed", func() bool { d, _ := received(); return d == 300 })
	owners := "/consumers/" + group + "/owners/" + topic
	waitZK("partitions 0-0, 1-0, 2-0 owned", func() bool { return slices.Equal(children(owners), []string{"0-0", "1-0", "2-0"}) })
	t.Logf("before: brokers %v, owners %v", children("/brokers/ids"), children(owners))

	// Stop broker 1: its registration vanishes and the group rebalances.
	c.run("stop", "kafka-1")
	waitZK("broker 1 gone", func() bool { return slices.Equal(children("/brokers/ids"), []string{"0", "2"}) })
	waitZK("the group to drop 1-0", func() bool { return slices.Equal(children(owners), []string{"0-0", "2-0"}) })
	t.Logf("after stopping kafka-1: brokers %v, owners %v", children("/brokers/ids"), children(owners))
	produce(300, 600)
	waitZK("600 messages consumed", func() bool { d, _ := received(); return d == 600 })

	// Broker 1 comes back with its log: the group takes its partition again.
	c.run("start", "kafka-1")
	waitZK("broker 1 back", func() bool { return slices.Equal(children("/brokers/ids"), []string{"0", "1", "2"}) })
	waitZK("the group to own 1-0 again", func() bool { return slices.Equal(children(owners), []string{"0-0", "1-0", "2-0"}) })
	produce(600, 900)
	waitZK("900 messages consumed", func() bool { d, _ := received(); return d == 900 })
	d, total := received()
	t.Logf("consumed %d distinct messages (%d deliveries) through the rebalances", d, total)

	composeReplicated(t, ctx, c, bin, zkAddr, waitZK)

	// The other two systems answer on their published loopback ports.
	for _, sys := range []struct {
		name string
		open func(compare.Endpoint) (compare.System, error)
		port string
	}{
		{"activemq", func(ep compare.Endpoint) (compare.System, error) { return activemq.New(ep) }, ports["ACTIVEMQ_STOMP_PORT"]},
		{"rabbitmq", func(ep compare.Endpoint) (compare.System, error) { return rabbitmq.New(ep) }, ports["RABBITMQ_PORT"]},
	} {
		port, _ := strconv.Atoi(sys.port)
		s, err := sys.open(compare.Endpoint{Host: "127.0.0.1", Port: port})
		if err != nil {
			t.Fatalf("%s: %v", sys.name, err)
		}
		var sent, got atomic.Int64
		if _, err := s.Produce(ctx, compare.ProduceSpec{Topic: "compose", Messages: 500, MessageSize: 200, Batch: 1, Sent: &sent}); err != nil {
			t.Fatalf("%s produce: %v", sys.name, err)
		}
		r, err := s.Consume(ctx, compare.ConsumeSpec{Topic: "compose", Messages: 500, MessageSize: 200, PrefetchMessages: 1000, PrefetchBytes: 200 << 10, Received: &got})
		if err != nil || r.Messages != 500 {
			t.Fatalf("%s consume: %d, %v", sys.name, r.Messages, err)
		}
		s.Close()
	}

	began = time.Now()
	c.run("down", "-v")
	t.Logf("compose down -v in %s", time.Since(began).Round(time.Second))
	if left := c.leftovers(); len(left) > 0 {
		t.Errorf("compose down -v left %v", left)
	}
}

// scripts/compose.sh runs `docker compose` where the plugin answers, else
// docker-compose, else fails naming both: tried with stand-in commands on
// an otherwise empty PATH.
func TestComposeScriptPicksWhatIsInstalled(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script := filepath.Join(repoDir(t), "scripts", "compose.sh")
	for _, tc := range []struct {
		name  string
		stubs map[string]string // command name -> script body
		want  string            // output of --which; "" means it must fail
	}{
		{"plugin", map[string]string{"docker": "exit 0", "docker-compose": "exit 0"}, "docker compose"},
		{"standalone only", map[string]string{"docker": `[ "$1" = compose ] && { echo "docker: unknown command: docker compose" >&2; exit 1; }; exit 0`, "docker-compose": "exit 0"}, "docker-compose"},
		{"neither", map[string]string{"docker": "exit 1"}, ""},
	} {
		dir := t.TempDir()
		for name, body := range tc.stubs {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("#!"+bash+"\n"+body+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(bash, script, "--which")
		cmd.Env = []string{"PATH=" + dir}
		out, err := cmd.CombinedOutput()
		got := strings.TrimSpace(string(out))
		switch {
		case tc.want == "" && (err == nil || !strings.Contains(got, "neither `docker compose`")):
			t.Errorf("%s: --which = %q, %v; want a failure naming both", tc.name, got, err)
		case tc.want != "" && (err != nil || got != tc.want):
			t.Errorf("%s: --which = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// composeReplicated is the cluster's replicated topic (docs/PROTOCOL.md §10): three replicas of one partition,
// messages produced with acks=-1, the leader's container stopped, more messages through the new leader, and
// every acknowledged message read back from the beginning; then the stopped broker comes back into the ISR.
func composeReplicated(t *testing.T, ctx context.Context, c *compose, bin, zkAddr string, waitZK func(string, func() bool)) {
	t.Helper()
	const topic = "compose-replicated"
	kafka := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kafka %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	describe := func() (leader, isr string) {
		out := kafka("", "topics", "--zookeeper", zkAddr, "--describe", "--topic", topic)
		m := regexp.MustCompile(`Leader: (\S+)\tReplicas: \S+\tIsr: (\S+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("describe %s:\n%s", topic, out)
		}
		return m[1], m[2]
	}
	produce := func(from, to int) {
		var in strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&in, "replicated-%05d\n", i)
		}
		kafka(in.String(), "console-producer", "--zookeeper", zkAddr, "--topic", topic, "--batch-size", "10",
			"--request-required-acks", "-1", "--request-timeout-ms", "10000")
	}
	kafka("", "topics", "--zookeeper", zkAddr, "--create", "--topic", topic, "--replication-factor", "3", "--partitions", "1")
	waitZK("all three replicas in sync", func() bool { _, isr := describe(); return len(strings.Split(isr, ",")) == 3 })
	produce(0, 200)
	leader, _ := describe()
	c.run("stop", "kafka-"+leader)
	waitZK("a new leader for "+topic, func() bool { l, _ := describe(); return l != leader && l != "none" })
	newLeader, isr := describe()
	t.Logf("stopped leader kafka-%s: broker %s leads, Isr %s", leader, newLeader, isr)
	produce(200, 400)
	out := kafka("", "console-consumer", "--zookeeper", zkAddr, "--topic", topic, "--from-beginning", "--max-messages", "400",
		"--consumer-timeout-ms", "30000")
	seen := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "replicated-") {
			seen[l] = true
		}
	}
	lost := 0
	for i := range 400 {
		if !seen[fmt.Sprintf("replicated-%05d", i)] {
			lost++
		}
	}
	t.Logf("replicated topic: 400 acknowledged (acks=-1), %d read back, %d lost", len(seen), lost)
	if lost > 0 {
		t.Errorf("%d acknowledged messages lost after the leader's container stopped", lost)
	}
	c.run("start", "kafka-"+leader)
	waitZK("kafka-"+leader+" back in the ISR", func() bool { _, isr := describe(); return len(strings.Split(isr, ",")) == 3 })
}
