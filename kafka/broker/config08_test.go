package broker

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The textbook's server.properties (Kafka 0.8.1.1's, textbook/config) loads
// with every key known, as the same settings 0.7's names set; its copies for
// the second and third brokers, which add broker.id, port and log.dir lines
// after the file's own, get their own id, port and directory.
func TestConfig08TheBooksServerProperties(t *testing.T) {
	var logged bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(prev)

	book, err := os.ReadFile(filepath.Join("..", "..", "textbook", "config", "server.properties"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(first, book, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(first, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BrokerID != 0 || cfg.Port != 9092 || cfg.LogDir != "/tmp/kafka-logs" || cfg.NumPartitions != 2 ||
		cfg.ZKConnect != "localhost:2181" || !cfg.EnableZooKeeper || cfg.ZKConnectionTimeout != 1000000 ||
		cfg.LogFileSize != 536870912 || cfg.RetentionHours != 168 || cfg.CleanupIntervalMins != 1 ||
		cfg.SocketSendBuffer != 1048576 || cfg.SocketReceiveBuffer != 1048576 || cfg.MaxRequestBytes != 104857600 {
		t.Errorf("the book's file read as %+v", cfg)
	}
	if strings.Contains(logged.String(), "unknown") {
		t.Errorf("keys of the book's file were not known:\n%s", logged.String())
	}

	// cp config/server.properties config/server-1.properties, then the book's three lines.
	second := filepath.Join(dir, "server-1.properties")
	copied := append(append([]byte{}, book...), "\nbroker.id=1\nport=9093\nlog.dir=/tmp/kafka-logs-1\n"...)
	if err := os.WriteFile(second, copied, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err = LoadConfig(second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BrokerID != 1 || cfg.Port != 9093 || cfg.LogDir != "/tmp/kafka-logs-1" {
		t.Errorf("the book's second broker: id %d, port %d, log.dir %s; want 1, 9093, /tmp/kafka-logs-1", cfg.BrokerID, cfg.Port, cfg.LogDir)
	}
}

// Each 0.8 name sets the field its 0.7 name sets, read here from the Config, not from renamed08.
func TestConfig08Names(t *testing.T) {
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	defer slog.SetDefault(prev)
	for _, tc := range []struct {
		key, value string
		got        func(Config) any
		want       any
	}{
		{"broker.id", "7", func(c Config) any { return c.BrokerID }, 7},
		{"host.name", "h7", func(c Config) any { return c.Hostname }, "h7"},
		{"log.dirs", "/d7", func(c Config) any { return c.LogDir }, "/d7"},
		{"log.segment.bytes", "7000", func(c Config) any { return c.LogFileSize }, int64(7000)},
		{"log.flush.interval.messages", "7", func(c Config) any { return c.FlushInterval }, 7},
		{"log.flush.interval.ms", "7", func(c Config) any { return c.FlushIntervalMs }, 7},
		{"log.retention.bytes", "7000", func(c Config) any { return c.RetentionSize }, int64(7000)},
		{"socket.send.buffer.bytes", "7000", func(c Config) any { return c.SocketSendBuffer }, 7000},
		{"socket.receive.buffer.bytes", "7000", func(c Config) any { return c.SocketReceiveBuffer }, 7000},
		{"socket.request.max.bytes", "7000", func(c Config) any { return c.MaxRequestBytes }, 7000},
		{"num.network.threads", "7", func(c Config) any { return c.NumThreads }, 7},
		{"num.io.threads", "7", func(c Config) any { return c.NumThreads }, 7},
		{"zookeeper.connect", "z7:2181", func(c Config) any { return [2]any{c.ZKConnect, c.EnableZooKeeper} }, [2]any{"z7:2181", true}},
		{"zookeeper.connection.timeout.ms", "7000", func(c Config) any { return c.ZKConnectionTimeout }, 7000},
		{"zookeeper.session.timeout.ms", "7000", func(c Config) any { return c.ZKSessionTimeout }, 7000},
	} {
		props := map[string]string{tc.key: tc.value}
		if tc.key != "zookeeper.connect" {
			props["zk.connect"] = "z:1" // for a Config that registers, as some values ask
		}
		cfg, err := LoadConfig("", props)
		if err != nil {
			t.Errorf("%s=%s: %v", tc.key, tc.value, err)
			continue
		}
		if got := tc.got(cfg); got != tc.want {
			t.Errorf("%s=%s set %v, want %v", tc.key, tc.value, got, tc.want)
		}
	}
	if len(renamed08) != 15 {
		t.Errorf("renamed08 has %d names; this test checks 15", len(renamed08))
	}
	for _, tc := range []struct {
		key, value string
		mins       int
	}{
		{"log.retention.check.interval.ms", "60000", 1},
		{"log.retention.check.interval.ms", "90000", 2},
		{"log.retention.check.interval.ms", "1", 1},
	} {
		cfg, err := LoadConfig("", map[string]string{tc.key: tc.value})
		if err != nil || cfg.CleanupIntervalMins != tc.mins {
			t.Errorf("%s=%s: %d minutes, %v; want %d", tc.key, tc.value, cfg.CleanupIntervalMins, err, tc.mins)
		}
	}
	for _, bad := range []map[string]string{
		{"log.dirs": "/tmp/a,/tmp/b"},
		{"log.cleaner.enable": "true"},
		{"log.cleaner.enable": "maybe"},
		{"log.retention.check.interval.ms": "0"},
		{"broker.id": "one"},
	} {
		_, err := LoadConfig("", bad)
		if !errors.Is(err, ErrConfig) {
			t.Errorf("%v: %v, want ErrConfig", bad, err)
			continue
		}
		for k := range bad {
			if !strings.Contains(err.Error(), k) {
				t.Errorf("%v: the error %q does not name the key", bad, err)
			}
		}
	}
}

// A misspelt name is ignored, as 0.7 did, with the nearest known one in the warning.
func TestConfigUnknownNameSuggests(t *testing.T) {
	var buf strings.Builder
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	if _, err := LoadConfig("", map[string]string{"broker.idd": "1", "zookeeper.conect": "localhost:2181", "nothing.like.it": "x"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"did you mean broker.id?", "did you mean zookeeper.connect?", "key=nothing.like.it"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the warnings lack %q:\n%s", want, buf.String())
		}
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, "key=nothing.like.it") && strings.Contains(line, "did you mean") {
			t.Errorf("a suggestion for a name like no other: %s", line)
		}
	}
}
