package local

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kafkarepro/kafkarepro/compare"
)

func TestFindRepoAndFreePort(t *testing.T) {
	dir, err := FindRepo()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "compare", "compare.go")); err != nil {
		t.Errorf("FindRepo = %s, which has no compare/compare.go", dir)
	}
	port, err := FreePort()
	if err != nil || port <= 0 {
		t.Fatalf("FreePort = %d, %v", port, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Errorf("port %d from FreePort is not free: %v", port, err)
	} else {
		l.Close()
	}
}

func TestUnknownService(t *testing.T) {
	p, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Start(context.Background(), "zeromq"); !errors.Is(err, ErrUnknownService) {
		t.Errorf("err = %v, want ErrUnknownService", err)
	}
	root := p.Root()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("Close left %s behind", root)
	}
}

// Our broker as its own process: it answers on its port, writes its log,
// and Stop stops it and removes its folder.
func TestIntegration_LocalKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts our broker")
	}
	p, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	srv, err := p.Start(context.Background(), "kafka")
	if err != nil {
		t.Fatal(err)
	}
	ep := srv.Endpoint()
	c, err := net.Dial("tcp", net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)))
	if err != nil {
		t.Fatalf("broker does not answer on %d: %v", ep.Port, err)
	}
	c.Close()
	if io, err := srv.(compare.ProcessIO).IOCounters(); err != nil || io.Processes != 1 {
		t.Errorf("broker IOCounters = %+v, %v; want the counters of one process", io, err)
	}
	if !strings.HasPrefix(ep.DataDir, p.Root()) || !strings.HasPrefix(ep.LogPath, p.Root()) || ep.Version == "" {
		t.Errorf("endpoint = %+v", ep)
	}
	dir := srv.(interface{ Dir() string }).Dir()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Stop left %s behind", dir)
	}
	if _, err := net.Dial("tcp", net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))); err == nil {
		t.Error("the broker still answers after Stop")
	}
	// A second broker reuses the binary built for the first.
	srv2, err := p.Start(context.Background(), "kafka")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv2.Stop(); err != nil {
		t.Fatal(err)
	}
}

// A bad server.properties: the start fails with an error naming the log.
func TestIntegration_LocalKafkaBadConfigNamesLog(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts our broker")
	}
	p, err := New(Options{Keep: true, KafkaProperties: map[string]string{"num.partitions": "zero"}})
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(p.Root())
	_, err = p.Start(context.Background(), "kafka")
	if !errors.Is(err, ErrStart) || !strings.Contains(err.Error(), "kafka.log") {
		t.Errorf("err = %v, want ErrStart naming kafka.log", err)
	}
}

// ZooKeeper through scripts/zookeeper.sh, when it is there.
func TestIntegration_LocalZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper")
	}
	p, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := os.Stat(filepath.Join(p.opts.RepoDir, "scripts", "zookeeper.sh")); err != nil {
		t.Skip("scripts/zookeeper.sh not written yet")
	}
	srv, err := p.Start(context.Background(), "zookeeper")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	ep := srv.Endpoint()
	c, err := net.Dial("tcp", net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)))
	if err != nil {
		t.Fatalf("zookeeper does not answer: %v", err)
	}
	c.Close()
	if ep.LogPath == "" || ep.Version == "" || ep.Version == "unknown" {
		t.Errorf("endpoint = %+v", ep)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
}
