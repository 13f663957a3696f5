package compression

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
)

// The corpus is the same for a seed, about 200 bytes a line, and repetitive
// the way logs are (hosts, paths and agents recur).
func TestCorpus(t *testing.T) {
	a, b := Corpus(Seed, 20000), Corpus(Seed, 20000)
	total := 0
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("line %d differs between two runs with the same seed", i)
		}
		total += len(a[i])
	}
	avg := float64(total) / float64(len(a))
	if avg < 180 || avg > 230 {
		t.Errorf("average line %.1f bytes, want about 200", avg)
	}
	t.Logf("average %.1f bytes; first line: %s", avg, a[0])
	if !bytes.Contains(a[1], []byte("HTTP/1.1\"")) || bytes.Equal(a[0], a[1]) {
		t.Errorf("lines do not look like access-log lines: %q", a[:2])
	}
}

// The experiment end to end against an in-process broker (whose CPU, being
// this process's, is not told apart: CPUMeasured is false), then its table,
// figure and report section.
func TestRunCompression(t *testing.T) {
	b := brokertest.Start(t, 0, brokertest.Options{Props: map[string]string{"log.default.flush.interval.ms": "5"}})
	c, err := Run(context.Background(), b.HostPort(), 0, 4000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Codecs) != 3 {
		t.Fatalf("%d codecs", len(c.Codecs))
	}
	none, gz, sn := c.Codecs[0], c.Codecs[1], c.Codecs[2]
	// No codec: exactly 10 bytes of header per magic-1 message.
	if want := c.AvgPayload + 10; none.BytesPerMessage < want-0.01 || none.BytesPerMessage > want+0.01 {
		t.Errorf("none: %.2f bytes per message, want %.2f", none.BytesPerMessage, want)
	}
	if !(gz.BytesPerMessage < sn.BytesPerMessage && sn.BytesPerMessage < none.BytesPerMessage/2) {
		t.Errorf("bytes per message: none %.1f, gzip %.1f, snappy %.1f; want gzip < snappy < none/2",
			none.BytesPerMessage, gz.BytesPerMessage, sn.BytesPerMessage)
	}
	table := table(c)
	t.Logf("\n%s", table)
	if !strings.Contains(table, "| snappy |") || !strings.Contains(table, "n/a") {
		t.Errorf("table:\n%s", table)
	}
	dir := t.TempDir()
	if err := Plot(filepath.Join(dir, "fig_compression.png"), c); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "fig_compression.png")); err != nil || st.Size() < 1000 {
		t.Fatalf("figure: %v", err)
	}
}
