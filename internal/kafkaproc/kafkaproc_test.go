package kafkaproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkarepro/kafkarepro/internal/localsvc"
	"github.com/kafkarepro/kafkarepro/kafka/broker"
)

func TestPropertiesFile(t *testing.T) {
	props := Properties(9999, "/x/logs")
	text := Format(props)
	for _, want := range []string{"port=9999\n", "log.dir=/x/logs\n", "enable.zookeeper=false\n", "log.flush.interval=10000\n",
		"# written by internal/kafkaproc: kafka-0.7-shipped\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("server.properties lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "brokerid") > strings.Index(text, "port") {
		t.Error("keys are not sorted")
	}
	// The file is one the broker reads back to the same settings.
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := broker.LoadConfig(path, nil)
	if err != nil || cfg.Port != 9999 || cfg.FlushInterval != 10000 || cfg.FlushIntervalMs != 1000 || cfg.LogFileSize != 512<<20 ||
		cfg.SocketSendBuffer != 1<<20 || cfg.EnableZooKeeper {
		t.Errorf("LoadConfig of the written file: %+v, %v", cfg, err)
	}
}

func TestDescribe(t *testing.T) {
	props := Properties(1, "/l")
	if got := Describe(props); got != broker.ShippedName {
		t.Errorf("Describe(Properties) = %q, want %q", got, broker.ShippedName)
	}
	props["log.flush.interval"] = "1"
	delete(props, "socket.send.buffer")
	props["zk.connect"] = "h:1"
	want := broker.ShippedName + " with log.flush.interval=1, zk.connect=h:1, socket.send.buffer unset"
	if got := Describe(props); got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}

// buildKafka builds the kafka command once for the tests that start it.
func buildKafka(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts our broker")
	}
	repo, err := localsvc.RepoDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "kafka")
	if err := Build(context.Background(), repo, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// A broker process: it answers on its port with the settings asked for, and
// a SIGTERM stops it cleanly; a broker killed behind the launcher's back is
// reported as unclean; a bad setting fails the start naming the log.
func TestIntegration_StartStop(t *testing.T) {
	bin := buildKafka(t)
	p, err := Start(context.Background(), Options{Bin: bin, Dir: filepath.Join(t.TempDir(), "b"), Override: map[string]string{"num.partitions": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("broker does not answer on %s: %v", p.Addr(), err)
	}
	c.Close()
	if got, want := p.Settings(), broker.ShippedName+" with num.partitions=2"; got != want {
		t.Errorf("Settings = %q, want %q", got, want)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(p.LogDir(), ".kafka_cleanshutdown")); err != nil {
		t.Errorf("no clean-shutdown marker after Stop: %v", err)
	}
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Error("the broker still answers after Stop")
	}

	killed, err := Start(context.Background(), Options{Bin: bin, Dir: filepath.Join(t.TempDir(), "k")})
	if err != nil {
		t.Fatal(err)
	}
	if err := killed.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-killed.exited
	if err := killed.Stop(); !errors.Is(err, ErrUnclean) {
		t.Errorf("Stop of a killed broker: %v, want ErrUnclean", err)
	}

	_, err = Start(context.Background(), Options{Bin: bin, Dir: filepath.Join(t.TempDir(), "bad"), Override: map[string]string{"num.partitions": "zero"}})
	if !errors.Is(err, ErrStart) || !strings.Contains(err.Error(), "kafka.log") {
		t.Errorf("start with num.partitions=zero: %v, want ErrStart naming kafka.log", err)
	}
}

// Launcher's brokers: each in a folder of its own, with the experiment's
// props, and its extra settings over them.
func TestIntegration_Launcher(t *testing.T) {
	bin := buildKafka(t)
	root := t.TempDir()
	start := Launcher(bin, root, localsvc.Host{}, map[string]string{"num.partitions": "3"})
	var stops []func() error
	for i, props := range []map[string]string{{"log.flush.interval": "1", "num.partitions": "2"}, nil} {
		_, settings, stop, err := start(context.Background(), props)
		if err != nil {
			t.Fatal(err)
		}
		stops = append(stops, stop)
		want := broker.ShippedName + " with num.partitions=3"
		if i == 0 {
			want = broker.ShippedName + " with log.flush.interval=1, num.partitions=3"
		}
		if settings != want {
			t.Errorf("broker %d: settings %q, want %q", i+1, settings, want)
		}
		if _, err := os.Stat(filepath.Join(root, fmt.Sprintf("broker%d", i+1), "server.properties")); err != nil {
			t.Errorf("broker %d: %v", i+1, err)
		}
	}
	for _, stop := range stops {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}
}
