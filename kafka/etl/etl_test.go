package etl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
)

// ReadAll returns every payload of every committed run of dir, in run order,
// descending into compressed wrappers. It is what a reader of the output
// does, and what the tests count.
func readAll(t testing.TB, dir string) []string {
	t.Helper()
	runs, err := Runs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, run := range runs {
		lines, err := ReadOffsets(filepath.Join(dir, run))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			data, err := os.ReadFile(filepath.Join(dir, run, l.File))
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(data)) != l.End-l.Start {
				t.Fatalf("%s/%s: %d bytes, OFFSETS says %d", run, l.File, len(data), l.End-l.Start)
			}
			d := message.NewDeepIterator(data, l.Start)
			for d.Next() {
				out = append(out, string(d.Message().Payload()))
			}
			if d.Err() != nil {
				t.Fatalf("%s/%s: %v", run, l.File, d.Err())
			}
		}
	}
	return out
}

func sendN(t testing.TB, p *producer.SyncProducer, topic string, part int32, from, n int) []string {
	t.Helper()
	var sent []string
	var batch [][]byte
	for i := from; i < from+n; i++ {
		m := fmt.Sprintf("msg-%d-%06d", part, i)
		sent = append(sent, m)
		batch = append(batch, []byte(m))
		if len(batch) == 50 || i == from+n-1 {
			if err := p.Send(topic, part, batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return sent
}

// waitEnd waits until the partition's flushed end reaches atLeast and returns it.
func waitEnd(t testing.TB, addr, topic string, part int32, atLeast int64) int64 {
	t.Helper()
	c := consumer.NewSimpleConsumer(addr, 5*time.Second)
	defer c.Close()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if end, err := c.LatestOffset(topic, part); err == nil && end >= atLeast {
			return end
		}
	}
	t.Fatalf("%s-%d: end offset never reached %d", topic, part, atLeast)
	return 0
}

// Each run loads exactly what arrived since the previous one: its start is
// the last run's end, its end the snapshot of the latest offsets.
func TestRunsContinueWhereTheLastEnded(t *testing.T) {
	b := brokertest.Start(t, 0, brokertest.Options{Props: map[string]string{"num.partitions": "2", "log.flush.interval": "1"}})
	cfg := producer.DefaultConfig()
	cfg.BrokerList = "0:" + b.HostPort()
	p, err := producer.NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	job := Job{Topic: "clicks", Output: filepath.Join(t.TempDir(), "out"), FetchSize: 4096,
		Partitions: []Partition{{0, b.HostPort(), 1}, {0, b.HostPort(), 0}}}
	var sent []string
	sent = append(sent, sendN(t, p, "clicks", 0, 0, 300)...)
	sent = append(sent, sendN(t, p, "clicks", 1, 0, 10)...)
	waitEnd(t, b.HostPort(), "clicks", 0, int64(300*message.Size(1, 12)))
	waitEnd(t, b.HostPort(), "clicks", 1, int64(10*message.Size(1, 12)))
	r1, err := job.Run()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(r1.Run) != "run-000001" || len(r1.Lines) != 2 || r1.Lines[0].Messages != 300 || r1.Lines[1].Messages != 10 {
		t.Fatalf("first run: %+v", r1)
	}
	// Nothing new: no run.
	if r, err := job.Run(); err != nil || r.Run != "" {
		t.Fatalf("second run with nothing new: %+v, %v", r, err)
	}
	// A gzip batch to partition 1 only; partition 0 gets a line with start = end.
	gz := cfg
	gz.Compression = message.CodecGzip
	pg, err := producer.NewSync(gz)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	sent = append(sent, sendN(t, pg, "clicks", 1, 10, 40)...)
	waitEnd(t, b.HostPort(), "clicks", 1, int64(10*message.Size(1, 12))+1)
	r2, err := job.Run()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(r2.Run) != "run-000002" || r2.Lines[0].Start != r2.Lines[0].End || r2.Lines[1].Start != r1.Lines[1].End || r2.Lines[1].Messages != 1 {
		t.Fatalf("third run: %+v (first %+v)", r2, r1)
	}
	data, _ := os.ReadFile(filepath.Join(r2.Run, "OFFSETS"))
	t.Logf("run-000002/OFFSETS:\n%s", data)
	got := readAll(t, job.Output)
	if strings.Join(got, ",") != strings.Join(sent, ",") {
		t.Fatalf("output holds %d messages, want the %d sent in order", len(got), len(sent))
	}
}

// Bad input: an output directory that cannot be one, one that another job
// holds, a topic name that is not one. Nothing committed is touched.
func TestBadOutputAndInput(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(file, []byte("x"), 0o644)
	parts := []Partition{{0, "127.0.0.1:1", 0}}
	if _, err := (Job{Topic: "t", Partitions: parts, Output: filepath.Join(file, "out")}).Run(); !errors.Is(err, ErrOutput) {
		t.Errorf("output under a file: %v", err)
	} else {
		t.Log(err)
	}
	dir := t.TempDir()
	unlock, err := lockOutput(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (Job{Topic: "t", Partitions: parts, Output: dir}).Run(); !errors.Is(err, ErrOutput) || !strings.Contains(err.Error(), "locked") {
		t.Errorf("locked output: %v", err)
	}
	unlock()
	if _, err := (Job{Topic: "../t", Partitions: parts, Output: dir}).Run(); err == nil {
		t.Errorf("topic ../t accepted")
	}
	// A damaged OFFSETS file stops the job instead of restarting from 0.
	os.MkdirAll(filepath.Join(dir, "run-000001"), 0o755)
	os.WriteFile(filepath.Join(dir, "run-000001", "OFFSETS"), []byte(offsetsHeader+"\nt 0-0 10 5 1 -5 t.0-0\n"), 0o644)
	if _, err := (Job{Topic: "t", Partitions: parts, Output: dir}).Run(); !errors.Is(err, ErrBadOffsets) {
		t.Errorf("bad OFFSETS: %v", err)
	}
}
