package zk_test

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/zk"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// eventually polls cond until it holds or fails the test after 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestIntegration_BrokerRegistry(t *testing.T) {
	connect := zktest.Start(t)
	r, err := zk.NewBrokerRegistry(connect, 7, "h1", 9092, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.RegisterTopic("t1", 4); err != nil {
		t.Fatal(err)
	}
	raw, err := zk.Connect(connect, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()

	data, err := raw.Get("/brokers/ids/7")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^h1-\d{13}:h1:9092$`).Match(data) {
		t.Errorf("/brokers/ids/7 = %q, want h1-<ms>:h1:9092", data)
	}
	if got, err := raw.Get("/brokers/topics/t1/7"); err != nil || string(got) != "4" {
		t.Errorf("/brokers/topics/t1/7 = %q, %v; want 4", got, err)
	}
	if err := r.RegisterTopic("t1", 5); err != nil {
		t.Fatal(err)
	}
	if got, _ := raw.Get("/brokers/topics/t1/7"); string(got) != "5" {
		t.Errorf("after a new count /brokers/topics/t1/7 = %q, want 5", got)
	}

	// With UseJSON, 0.8's JSON, which our own readers parse as well.
	r8, err := zk.OpenBrokerRegistry(connect, 8, "h8", 9098, zk.Options{SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r8.Close()
	r8.UseJSON()
	if err := r8.RegisterBroker(); err != nil {
		t.Fatal(err)
	}
	if data, err := raw.Get("/brokers/ids/8"); err != nil || !regexp.MustCompile(`^\{"jmx_port":-1,"timestamp":"\d{13}","host":"h8","version":1,"port":9098\}$`).Match(data) {
		t.Errorf("/brokers/ids/8 = %q, %v; want 0.8's JSON", data, err)
	}
	if live, err := zk.LiveBrokers(raw, nil); err != nil || live[8].Addr() != "h8:9098" || live[7].Addr() != "h1:9092" {
		t.Errorf("LiveBrokers = %+v, %v; want h1:9092 (0.7's line) and h8:9098 (0.8's JSON)", live, err)
	}

	// A second broker with the same id is refused (after waiting out one session timeout).
	_, err = zk.NewBrokerRegistry(connect, 7, "h2", 9093, time.Second)
	if !errors.Is(err, zk.ErrBrokerIDTaken) {
		t.Errorf("duplicate broker id: err = %v, want ErrBrokerIDTaken", err)
	}

	// Close deregisters: the ephemeral nodes go, the persistent parent stays.
	r.Close()
	for _, p := range []string{"/brokers/ids/7", "/brokers/topics/t1/7"} {
		if ok, _ := raw.Exists(p); ok {
			t.Errorf("%s still exists after Close", p)
		}
	}
	if ok, _ := raw.Exists("/brokers/topics/t1"); !ok {
		t.Error("/brokers/topics/t1 (persistent) was removed")
	}
}

// TestIntegration_BrokerSessionExpiry cuts the broker off ZooKeeper (through a proxy) for longer than its
// session timeout: the server expires the session and deletes its nodes; once the broker is back it must
// register itself and its topics again.
func TestIntegration_BrokerSessionExpiry(t *testing.T) {
	connect := zktest.Start(t)
	proxy := zktest.NewProxy(t, connect)
	r, err := zk.NewBrokerRegistry(proxy.Addr()+"/chroot", 3, "h", 9000, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, topic := range []string{"a", "b"} {
		if err := r.RegisterTopic(topic, 2); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := zk.Connect(connect+"/chroot", 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	before, _ := raw.Get(zk.BrokerIDPath(3))
	oldSession := r.Client().SessionID()

	proxy.Cut()
	eventually(t, "the server to expire the broker's session", func() bool {
		ok, err := raw.Exists(zk.BrokerIDPath(3))
		return err == nil && !ok
	})
	proxy.Restore()
	for _, p := range []string{zk.BrokerIDPath(3), zk.BrokerTopicBrokerPath("a", 3), zk.BrokerTopicBrokerPath("b", 3)} {
		eventually(t, p+" to come back", func() bool {
			ok, err := raw.Exists(p)
			return err == nil && ok
		})
	}
	after, _ := raw.Get(zk.BrokerIDPath(3))
	if string(after) == string(before) {
		t.Errorf("registration data unchanged (%q): want a new creator timestamp", after)
	}
	if r.Client().SessionID() == oldSession {
		t.Error("same session id after expiry")
	}
	if got, _ := raw.Get(zk.BrokerTopicBrokerPath("b", 3)); string(got) != "2" {
		t.Errorf("topic b count = %q, want 2", got)
	}
}

func TestIntegration_Discovery(t *testing.T) {
	connect := zktest.Start(t)
	d, err := zk.NewDiscovery(connect, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, err := d.Partitions("t"); err != nil || len(got) != 0 {
		t.Fatalf("no brokers: partitions = %v, %v", got, err)
	}
	if _, err := d.Partitions("../x"); !errors.Is(err, zk.ErrBadPath) {
		t.Errorf("bad topic: err = %v", err)
	}
	parts := func(topic string) string {
		ps, err := d.Partitions(topic)
		if err != nil {
			t.Fatal(err)
		}
		s := ""
		for _, p := range ps {
			s += p.Name() + " "
		}
		return s
	}
	want := func(topic, w string) {
		t.Helper()
		eventually(t, fmt.Sprintf("partitions of %s = %q (have %q)", topic, w, parts(topic)), func() bool { return parts(topic) == w })
	}

	b10, err := zk.NewBrokerRegistry(connect, 10, "h10", 9010, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer b10.Close()
	want("t", "10-0 ")
	b2, err := zk.NewBrokerRegistry(connect, 2, "h2", 9002, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	// Not registered anywhere: partition 0 of every live broker, by broker id numerically.
	want("t", "2-0 10-0 ")
	eventually(t, "two brokers", func() bool { return len(d.Brokers()) == 2 })
	if b, ok := d.Broker(2); !ok || b.Addr() != "h2:9002" || b.Host != "h2" || b.Port != 9002 {
		t.Errorf("broker 2 = %+v, %v", b, ok)
	}

	if err := b2.RegisterTopic("t", 12); err != nil {
		t.Fatal(err)
	}
	if err := b10.RegisterTopic("t", 2); err != nil {
		t.Fatal(err)
	}
	want("t", "2-0 2-1 2-2 2-3 2-4 2-5 2-6 2-7 2-8 2-9 2-10 2-11 10-0 10-1 ")
	ps, _ := d.Partitions("t")
	if !slices.IsSortedFunc(ps, func(a, b zk.Partition) int {
		if a.BrokerID != b.BrokerID {
			return a.BrokerID - b.BrokerID
		}
		return a.Partition - b.Partition
	}) {
		t.Errorf("not sorted numerically: %v", ps)
	}

	// A broker leaves: its partitions go.
	b2.Close()
	want("t", "10-0 10-1 ")
	eventually(t, "one broker", func() bool { return len(d.Brokers()) == 1 })
	// One comes back (same id, new session).
	b2, err = zk.NewBrokerRegistry(connect, 2, "h2", 9002, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if err := b2.RegisterTopic("t", 1); err != nil {
		t.Fatal(err)
	}
	want("t", "2-0 10-0 10-1 ")
}

func TestParseBroker(t *testing.T) {
	b, err := zk.ParseBroker(1, "host-a-1700000000000:host-a:9092")
	if err != nil || b.Creator != "host-a-1700000000000" || b.Host != "host-a" || b.Port != 9092 || b.ID != 1 {
		t.Fatalf("ParseBroker = %+v, %v", b, err)
	}
	// Kafka 0.8's registration, as 0.8.1.1's broker writes it.
	b, err = zk.ParseBroker(2, `{"jmx_port":-1,"timestamp":"1700000000000","host":"host-b","version":1,"port":9093}`)
	if err != nil || b.Creator != "host-b-1700000000000" || b.Host != "host-b" || b.Port != 9093 || b.ID != 2 {
		t.Fatalf("ParseBroker(0.8's JSON) = %+v, %v", b, err)
	}
	for _, bad := range []string{"", "x", "c:h:", "c:h:0", "c:h:x", "c::9", "{", `{"host":"h"}`, `{"host":"","port":9092}`, `{"host":"h","port":70000}`} {
		if _, err := zk.ParseBroker(1, bad); !errors.Is(err, zk.ErrBadRegistration) {
			t.Errorf("ParseBroker(%q) err = %v", bad, err)
		}
	}
}

// TestIntegration_BrokerSurvivesZooKeeperRestart stops the (only) ZooKeeper server for longer than the
// broker's session timeout and starts it again with the same data: the broker's client reconnects, and
// whether the server kept the session (it restores sessions from its snapshot) or expired it, the broker's
// nodes are there afterwards.
func TestIntegration_BrokerSurvivesZooKeeperRestart(t *testing.T) {
	srv := zktest.StartServer(t)
	r, err := zk.NewBrokerRegistry(srv.Connect(), 4, "h", 9004, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.RegisterTopic("t", 1); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	time.Sleep(3 * time.Second) // > the session timeout
	srv.Restart()
	raw, err := zk.Connect(srv.Connect(), 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, p := range []string{zk.BrokerIDPath(4), zk.BrokerTopicBrokerPath("t", 4)} {
		eventually(t, p+" after the restart", func() bool {
			ok, err := raw.Exists(p)
			return err == nil && ok
		})
	}
}
