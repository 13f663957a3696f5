package consumer

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/kafkabin"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// startBrokerProcess runs broker id as a process of the kafka command (kafka server-start), so that a test can
// kill it with SIGKILL: its registrations then vanish only when its ZooKeeper session (2 s) expires.
func startBrokerProcess(t *testing.T, zkc string, id int) (*testBroker, *exec.Cmd) {
	t.Helper()
	bin := kafkabin.Build(t)
	port := zktest.FreePort(t)
	dir := t.TempDir()
	props := fmt.Sprintf("brokerid=%d\nhostname=127.0.0.1\nport=%d\nlog.dir=%s\nnum.partitions=4\n"+
		"log.default.flush.interval.ms=20\nenable.zookeeper=true\nzk.connect=%s\nzk.sessiontimeout.ms=2000\n",
		id, port, filepath.Join(dir, "logs"), zkc)
	cfgPath := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(cfgPath, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "server-start", cfgPath)
	logf, _ := os.Create(filepath.Join(dir, "server.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
		}
		logf.Close()
	})
	return &testBroker{id: id, hostPort: fmt.Sprintf("127.0.0.1:%d", port)}, cmd
}

// TestIntegration_BrokerKilled: a broker process killed with SIGKILL while a group consumes leaves the broker
// registry when its session expires; the group rebalances to the partitions that remain and goes on reading.
func TestIntegration_BrokerKilled(t *testing.T) {
	zkc := zktest.Start(t)
	b0 := startBroker(t, zkc, 0)
	b1, cmd := startBrokerProcess(t, zkc, 1)
	c := rawZK(t, zkc)
	waitFor(t, 20*time.Second, "broker 1 registered", func() bool {
		ok, _, _ := c.Exists(zk.BrokerIDPath(1))
		return ok
	})
	p := newProducer(t, b0, b1)
	first := produceAll(t, p, "t", "a", 80, b0, b1)
	ms := []*member{startMember(t, fastConfig(zkc, "g"), "t", 1), startMember(t, fastConfig(zkc, "g"), "t", 1)}
	drain(t, 15*time.Second, first, ms...)
	waitFor(t, 10*time.Second, "8 partitions owned", func() bool { return balanced(c, "g", "t", 8) })

	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	gone := waitFor(t, 10*time.Second, "broker 1 to leave the registry", func() bool {
		ok, _, _ := c.Exists(zk.BrokerIDPath(1))
		return !ok
	})
	t.Logf("broker 1 left the registry %v after SIGKILL (zk.sessiontimeout.ms=2000)", gone)
	waitFor(t, 10*time.Second, "the group to rebalance to broker 0's 4 partitions", func() bool {
		return balanced(c, "g", "t", 4)
	})
	p0 := newProducer(t, b0)
	after := produceAll(t, p0, "t", "b", 40, b0)
	drain(t, 15*time.Second, after, ms...)
}
