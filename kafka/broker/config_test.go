package broker

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The shipped kafka/config/server.properties sets exactly the defaults.
func TestShippedServerProperties(t *testing.T) {
	cfg, err := LoadConfig("../config/server.properties", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.TopicPartitions = map[string]int{}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("shipped file:\n got %+v\nwant %+v", cfg, want)
	}
	if cfg.NumThreads != runtime.NumCPU() || cfg.Port != 9092 || cfg.LogFileSize != 1<<30 || cfg.ZKSessionTimeout != 6000 {
		t.Fatalf("defaults: %+v", cfg)
	}
}

func TestLoadConfig(t *testing.T) {
	p := writeFile(t, `
# comment
! another comment
brokerid = 3
hostname:broker3.example
port 9093
log.dir=/var/kafka\
    /logs
topic.partition.count.map=t1:4, t2:2
log.file.size=536870912
log.flush.interval=10000
log.default.flush.interval.ms=1000
log.retention.size=1099511627776
enable.zookeeper=true
zk.connect=zk1:2181,zk2:2181/kafka
some.future.key=whatever
num.threads=8
`)
	cfg, err := LoadConfig(p, map[string]string{"port": "0", "num.partitions": "5"})
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.BrokerID, want.Hostname, want.Port, want.LogDir = 3, "broker3.example", 0, "/var/kafka/logs"
	want.TopicPartitions = map[string]int{"t1": 4, "t2": 2}
	want.NumPartitions, want.LogFileSize, want.FlushInterval, want.FlushIntervalMs = 5, 512<<20, 10000, 1000
	want.RetentionSize, want.EnableZooKeeper, want.ZKConnect, want.NumThreads = 1<<40, true, "zk1:2181,zk2:2181/kafka", 8
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("\n got %+v\nwant %+v", cfg, want)
	}
	lc := cfg.LogConfig()
	if lc.FileSize != 512<<20 || lc.NumPartitions != 5 || lc.TopicPartitions["t1"] != 4 || lc.FlushInterval != 10000 {
		t.Fatalf("LogConfig: %+v", lc)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	cases := []struct{ text, key, value string }{
		{"port=ninety", "port", "ninety"},
		{"port=70000", "port", "70000"},
		{"log.file.size=1G", "log.file.size", "1G"},
		{"enable.zookeeper=yes please", "enable.zookeeper", "yes please"},
		{"topic.partition.count.map=t1:4,../x:2", "topic.partition.count.map", "../x"},
		{"topic.partition.count.map=t1", "topic.partition.count.map", "t1"},
		{"topic.partition.count.map=t1:0", "topic.partition.count.map", "t1:0"},
		{"num.partitions=0", "num.partitions", "0"},
		{"enable.zookeeper=true", "zk.connect", ""},
		{"queued.max.request.bytes=1000", "queued.max.request.bytes", "1000"},
		{"queued.max.request.bytes=0", "queued.max.request.bytes", "0"},
		{"max.socket.request.bytes=1000\nqueued.max.request.bytes=999", "queued.max.request.bytes", "999"},
		{"queued.max.request.bytes=lots", "queued.max.request.bytes", "lots"},
		{"connections.max.idle.ms=0", "connections.max.idle.ms", "0"},
		{"connections.max.idle.ms=-2", "connections.max.idle.ms", "-2"},
		{"max.connections.per.ip=0", "max.connections.per.ip", "0"},
		{"max.connections.per.ip=many", "max.connections.per.ip", "many"},
		{"max.connections=-1", "max.connections", "-1"},
		{"log.grown.buffers.max=-1", "log.grown.buffers.max", "-1"},
	}
	for _, c := range cases {
		_, err := LoadConfig(writeFile(t, c.text+"\n"), nil)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), c.value) {
			t.Errorf("%q: err = %v; want ErrConfig naming %s and %q", c.text, err, c.key, c.value)
		}
	}
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "missing"), nil); !errors.Is(err, ErrConfig) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := LoadConfig("", map[string]string{"brokerid": "-1"}); !errors.Is(err, ErrConfig) {
		t.Errorf("override brokerid=-1: %v", err)
	}
}

// The resource limits' special values are accepted: no budget, never idle,
// a budget exactly the maximum request size.
func TestResourceLimitValues(t *testing.T) {
	cfg, err := LoadConfig("", map[string]string{"queued.max.request.bytes": "-1", "connections.max.idle.ms": "-1",
		"max.connections.per.ip": "1", "max.connections": "0"})
	if err != nil || cfg.QueuedMaxRequestBytes != -1 || cfg.ConnectionsMaxIdleMs != -1 || cfg.MaxConnectionsPerIP != 1 || cfg.MaxConnections != 0 {
		t.Fatalf("%+v, %v", cfg, err)
	}
	cfg, err = LoadConfig("", map[string]string{"max.socket.request.bytes": "5000", "queued.max.request.bytes": "5000", "max.connections": "10"})
	if err != nil || cfg.QueuedMaxRequestBytes != 5000 || cfg.MaxConnections != 10 {
		t.Fatalf("%+v, %v", cfg, err)
	}
}
