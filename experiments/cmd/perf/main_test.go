package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--messages", "1000", "--phases", "b1 consumer"}, io.Discard)
	if err != nil || o.messages != 1000 || o.b1Messages != 1000 || o.size != 200 || o.fetchSize != 307200 ||
		strings.Join(o.phases, ",") != "b1,consumer" || o.bin != "bin/kafka" {
		t.Errorf("parseFlags = %+v, %v", o, err)
	}
	for _, bad := range [][]string{{"--phases", "b2"}, {"--messages", "0"}, {"extra"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
}

// The whole command on a small run: three result lines, each naming the
// broker's settings, the load with every step, and a clean shutdown.
func TestIntegration_Perf(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts our broker")
	}
	o, err := parseFlags([]string{"--messages", "20000", "--kafka-bin", filepath.Join(t.TempDir(), "kafka")}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), o, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"broker settings kafka-0.7-shipped: brokerid=0 enable.zookeeper=false log.default.flush.interval.ms=1000 ",
		"producer50 result: tool=producer-perf topic=perf50 batch=50 ",
		"producer1 result: tool=producer-perf topic=perf1 batch=1 ",
		"consumer result: tool=consumer-perf topic=perf50 ",
		"rate per tenth", "broker during producer50: ",
		"broker: clean shutdown (exit 0, ",
		"summary (broker settings kafka-0.7-shipped):",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^result: .* settings=kafka-0\.7-shipped$`).FindAllString(text, -1)); n != 3 {
		t.Errorf("%d summary result lines with settings=kafka-0.7-shipped, want 3:\n%s", n, text)
	}
	if n := len(regexp.MustCompile(`(?m)^== .*\(load average: [0-9.]+, [0-9.]+, [0-9.]+, page cache [0-9,]+ MB\)$`).FindAllString(text, -1)); n < 5 {
		t.Errorf("%d steps name the load and the page cache, want every one (5):\n%s", n, text)
	}
}
