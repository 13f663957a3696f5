package brokertest_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// A broker stopped and restarted keeps its port and log.dir: what was
// flushed before the stop is served after the restart, to a consumer that
// still uses the old address.
func TestStopRestart(t *testing.T) {
	b := brokertest.Start(t, 7, brokertest.Options{Props: map[string]string{"num.partitions": "2"}})
	if b.Config().BrokerID != 7 || b.Config().NumPartitions != 2 || b.Config().Hostname != "127.0.0.1" {
		t.Fatalf("config %+v: want brokerid 7, num.partitions 2, hostname 127.0.0.1", b.Config())
	}
	addr := b.HostPort()
	l, err := b.Logs().GetOrCreate("t", 1)
	if err != nil {
		t.Fatal(err)
	}
	set := message.AppendV0(nil, []byte("kept across the restart"))
	if _, err := l.Append(set); err != nil {
		t.Fatal(err)
	}
	b.Flush("t", 1)
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	if b.Running() {
		t.Fatal("Running after Stop")
	}
	if _, err := os.Stat(filepath.Join(b.Dir, log.CleanShutdownFile)); err != nil {
		t.Fatalf("Stop is not a clean shutdown: %v", err)
	}
	if err := b.Stop(); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
	b.Restart()
	if !b.Running() || b.HostPort() != addr || b.Addr().String() != addr {
		t.Fatalf("after Restart: running %v at %s (%s), want %s", b.Running(), b.HostPort(), b.Addr(), addr)
	}
	c := consumer.NewSimpleConsumer(addr, 5*time.Second)
	defer c.Close()
	got, err := c.Fetch("t", 1, 0, 1000)
	if err != nil || string(got) != string(set) {
		t.Fatalf("fetch after restart: %q, %v; want %q", got, err, set)
	}
}

// Three brokers in ZooKeeper: each registers /brokers/ids/<id> with its
// address (§3.2); a stopped one leaves the registry and a restarted one is
// back at the same address.
func TestIntegration_ClusterInZooKeeper(t *testing.T) {
	connect := zktest.Start(t) + "/brokertest"
	c := brokertest.StartCluster(t, 3, brokertest.Options{ZKConnect: connect})
	addrs := func(bs ...*brokertest.Broker) string {
		var s []string
		for _, b := range bs {
			s = append(s, b.HostPort())
		}
		slices.Sort(s)
		return strings.Join(s, ",")
	}
	if bl := c.BrokerList(); bl != "0:"+c[0].HostPort()+",1:"+c[1].HostPort()+",2:"+c[2].HostPort() {
		t.Fatalf("BrokerList %q", bl)
	}
	d, err := zk.NewDiscovery(connect, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	registered := func() string {
		var s []string
		for _, b := range d.Brokers() {
			s = append(s, b.Addr())
		}
		slices.Sort(s)
		return strings.Join(s, ",")
	}
	waitFor(t, d, registered, addrs(c...))
	if err := c[1].Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, d, registered, addrs(c[0], c[2]))
	c[1].Restart()
	waitFor(t, d, registered, addrs(c...))
}

func waitFor(t *testing.T, d *zk.Discovery, got func() string, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for g := got(); g != want; g = got() {
		if time.Now().After(deadline) {
			t.Fatalf("brokers in ZooKeeper: %s, want %s", g, want)
		}
		select {
		case <-d.Changed():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
