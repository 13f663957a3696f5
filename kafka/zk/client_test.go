package zk_test

import (
	"errors"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/zk"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

func TestIntegration_ClientChroot(t *testing.T) {
	connect := zktest.Start(t)
	c, err := zk.Connect(connect+"/kafka/test", 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := zk.Connect(connect, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()

	if err := c.CreateEphemeral(zk.BrokerIDPath(1), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateEphemeral(zk.BrokerIDPath(1), []byte("y")); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("second CreateEphemeral err = %v, want ErrNodeExists", err)
	}
	got, err := raw.Get("/kafka/test/brokers/ids/1")
	if err != nil || string(got) != "x" {
		t.Fatalf("node under chroot = %q, %v", got, err)
	}
	ids, w, err := c.ChildrenW(zk.BrokerIDsPath)
	if err != nil || len(ids) != 1 || ids[0] != "1" {
		t.Fatalf("ChildrenW = %v, %v", ids, err)
	}
	if err := c.CreateEphemeral(zk.BrokerIDPath(2), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w:
		if ev.Path != zk.BrokerIDsPath {
			t.Errorf("watch event path %q, want %q (relative to the chroot)", ev.Path, zk.BrokerIDsPath)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event for a new child")
	}
	p := zk.OffsetPath("g", "t", "1-0")
	for _, v := range []string{"10", "20"} {
		if err := c.SetPersistent(p, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := c.Get(p); err != nil || string(got) != "20" {
		t.Fatalf("offset = %q, %v", got, err)
	}
	if err := c.Delete("/no/such/node"); err != nil {
		t.Errorf("Delete of a missing node: %v", err)
	}
	if _, err := c.Get("relative"); !errors.Is(err, zk.ErrBadPath) {
		t.Errorf("Get(relative) err = %v, want ErrBadPath", err)
	}
	// Ephemeral nodes die with the session.
	c.Close()
	if ok, err := raw.Exists("/kafka/test/brokers/ids/1"); err != nil || ok {
		t.Errorf("ephemeral node after Close: exists=%v err=%v", ok, err)
	}
}

func TestIntegration_ConnectTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	port := zktest.FreePort(t)
	start := time.Now()
	_, err := zk.Open("127.0.0.1:"+itoa(port), zk.Options{SessionTimeout: time.Second, ConnectTimeout: 500 * time.Millisecond})
	if !errors.Is(err, zk.ErrConnectTimeout) {
		t.Fatalf("err = %v, want ErrConnectTimeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open took %v with a 500ms connect timeout", d)
	}
}
