// Package brokertest starts in-process brokers for tests, as net/http/httptest
// starts HTTP servers: one broker or a cluster of several, each on a free
// 127.0.0.1 port with its log.dir in a fresh temporary directory, optionally
// registered in a real ZooKeeper (paper §3.2), with server.properties
// overrides, and each one stoppable and restartable on the same port and
// log.dir. Every broker is closed when the test ends.
//
//	c := brokertest.StartCluster(t, 3, brokertest.Options{
//		ZKConnect: zktest.Start(t),
//		Props:     map[string]string{"num.partitions": "2"},
//	})
//	p := producer with cfg.BrokerList = c.BrokerList()
//	c[1].Stop()    // a clean shutdown
//	c[1].Restart() // same id, port and log.dir
//
// The package imports only the broker, the log and ZooKeeper, so the tests of
// every client package (consumer and producer included) can use it.
package brokertest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// Options shape the brokers a test starts.
type Options struct {
	// Props are server.properties overrides (docs/PROTOCOL.md §8), applied
	// over 0.7's defaults and the test's own: hostname=127.0.0.1, a free
	// port, log.dir in t.TempDir(), brokerid, and with ZKConnect
	// enable.zookeeper=true, zk.connect and zk.sessiontimeout.ms=4000. The
	// flush policy stays 0.7's (log.flush.interval=500,
	// log.default.flush.interval.ms=3000) unless Props say otherwise, since
	// what a test may see depends on it (§3.1: only flushed messages are
	// exposed to consumers).
	Props map[string]string
	// ZKConnect, if not "", registers every broker in that ZooKeeper
	// (connect string, chroot included).
	ZKConnect string
	// Registrar, if not nil, makes the broker's registrar at every start
	// instead of a ZooKeeper registry (a test's fake).
	Registrar func(broker.Config) (broker.Registrar, error)
	// Logger receives the brokers' logs, each with a "broker" attribute; nil
	// is Logger(t): warnings and errors in the test's log.
	Logger *slog.Logger
}

// Broker is one in-process broker. The embedded *broker.Broker is the
// running one (Addr, Logs, Config, ...); it changes at every Restart.
type Broker struct {
	*broker.Broker
	ID  int
	Dir string // log.dir, kept across restarts

	t      testing.TB
	o      Options
	cfg    broker.Config
	mu     sync.Mutex
	served chan error // Serve's result; nil while stopped
}

// Start starts broker id and closes it when the test ends.
func Start(t testing.TB, id int, o Options) *Broker {
	t.Helper()
	if o.ZKConnect != "" && o.Registrar != nil {
		t.Fatalf("brokertest: Options with both ZKConnect and Registrar")
	}
	if o.Logger == nil {
		o.Logger = Logger(t)
	}
	props := map[string]string{
		"brokerid": strconv.Itoa(id),
		"hostname": "127.0.0.1",
		"port":     "0",
		"log.dir":  filepath.Join(t.TempDir(), "logs"),
	}
	if o.ZKConnect != "" {
		// The registration names the port, so it must be known before
		// the broker listens.
		props["port"] = strconv.Itoa(zktest.FreePort(t))
		props["enable.zookeeper"] = "true"
		props["zk.connect"] = o.ZKConnect
		props["zk.sessiontimeout.ms"] = "4000"
	}
	maps.Copy(props, o.Props)
	cfg, err := broker.LoadConfig("", props)
	if err != nil {
		t.Fatalf("brokertest: broker %d: %v", id, err)
	}
	b := &Broker{ID: id, Dir: cfg.LogDir, t: t, o: o, cfg: cfg}
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Errorf("brokertest: stop broker %d at the end of the test: %v", id, err)
		}
	})
	b.Restart()
	return b
}

// Restart starts the broker again after Stop with the same id, port and
// log.dir (recovering its logs if the clean-shutdown marker is gone, §3.3);
// it does nothing while the broker runs.
func (b *Broker) Restart() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.served != nil {
		return
	}
	opts := broker.Options{Logger: b.o.Logger.With("broker", b.ID)}
	var err error
	switch {
	case b.o.Registrar != nil:
		opts.Registrar, err = b.o.Registrar(b.cfg)
	case b.cfg.EnableZooKeeper:
		opts.Registrar, err = zk.OpenBrokerRegistry(b.cfg.ZKConnect, b.ID, b.cfg.Hostname, b.cfg.Port, zk.Options{
			SessionTimeout: time.Duration(b.cfg.ZKSessionTimeout) * time.Millisecond,
			ConnectTimeout: time.Duration(b.cfg.ZKConnectionTimeout) * time.Millisecond,
			Logger:         opts.Logger,
		})
	}
	if err != nil {
		b.t.Fatalf("brokertest: registrar of broker %d: %v", b.ID, err)
	}
	bk, err := broker.New(b.cfg, opts)
	if err != nil {
		if opts.Registrar != nil {
			opts.Registrar.Close()
		}
		b.t.Fatalf("brokertest: start broker %d: %v", b.ID, err)
	}
	// Port 0 picked a port: keep it for restarts.
	b.cfg.Port = bk.Addr().(*net.TCPAddr).Port
	b.Broker = bk
	b.served = make(chan error, 1)
	go func(served chan<- error) { served <- bk.Serve(context.Background()) }(b.served)
}

// Stop shuts the broker down cleanly (Close: flush, clean-shutdown marker,
// deregistration) and waits for Serve to return; it returns the first error
// of either, and nil if the broker was not running. It may be called from
// any goroutine.
func (b *Broker) Stop() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.served == nil {
		return nil
	}
	served := b.served
	b.served = nil
	err := b.Broker.Close()
	select {
	case serveErr := <-served:
		if err == nil {
			err = serveErr
		}
	case <-time.After(10 * time.Second):
		err = errors.Join(err, fmt.Errorf("brokertest: Serve of broker %d did not return 10 s after Close", b.ID))
	}
	return err
}

// Running reports whether the broker is started (between Restart and Stop).
func (b *Broker) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.served != nil
}

// HostPort is the broker's address, "127.0.0.1:port"; it stays the same
// across restarts.
func (b *Broker) HostPort() string {
	return b.cfg.Hostname + ":" + strconv.Itoa(b.cfg.Port)
}

// Flush makes everything appended to topic-partition so far visible to
// fetches (§3.1: only flushed messages are exposed to consumers), without
// waiting for log.flush.interval or the flush timer.
func (b *Broker) Flush(topic string, partition int) {
	b.t.Helper()
	l, ok := b.Logs().Get(topic, partition)
	if !ok {
		b.t.Fatalf("brokertest: broker %d has no log %s-%d", b.ID, topic, partition)
	}
	if err := l.Flush(); err != nil {
		b.t.Fatalf("brokertest: flush %s-%d on broker %d: %v", topic, partition, b.ID, err)
	}
}

// Cluster is brokers 0..n-1, all with the same Options.
type Cluster []*Broker

// StartCluster starts n brokers with ids 0..n-1 and closes them when the test
// ends.
func StartCluster(t testing.TB, n int, o Options) Cluster {
	t.Helper()
	c := make(Cluster, n)
	for i := range c {
		c[i] = Start(t, i, o)
	}
	return c
}

// BrokerList is the producer's broker.list for the cluster,
// "id:host:port,id:host:port,...".
func (c Cluster) BrokerList() string {
	parts := make([]string, len(c))
	for i, b := range c {
		parts[i] = strconv.Itoa(b.ID) + ":" + b.HostPort()
	}
	return strings.Join(parts, ",")
}
