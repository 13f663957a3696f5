package mirror_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/kafkabin"
	"github.com/kafkarepro/kafkarepro/kafka/audit"
	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	kafkabin.Remove()
	os.Exit(code)
}

// cluster is one ZooKeeper and two brokers of two partitions each.
type cluster struct {
	zk      string
	brokers []*brokertest.Broker
}

func startCluster(t *testing.T, props map[string]string) cluster {
	connect := zktest.Start(t)
	p := map[string]string{"num.partitions": "2", "log.default.flush.interval.ms": "20", "log.flush.interval": "100"}
	for k, v := range props {
		p[k] = v
	}
	c := brokertest.StartCluster(t, 2, brokertest.Options{ZKConnect: connect, Props: p})
	return cluster{zk: connect, brokers: c}
}

// auditCheck runs `kafka audit-check` and returns its exit code, output and
// the rows it printed (window → produced, consumed, missing, duplicated).
func auditCheck(t *testing.T, bin string, args ...string) (int, string, map[string][4]int64) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"audit-check"}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	rows := map[string][4]int64{}
	row := regexp.MustCompile(`^\s*(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)`)
	for _, l := range strings.Split(out.String(), "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			var r [4]int64
			for i := range r {
				r[i], _ = strconv.ParseInt(m[2+i], 10, 64)
			}
			rows[m[1]] = r
		}
	}
	return code, out.String() + errOut.String(), rows
}

func totals(rows map[string][4]int64) (produced, consumed, missing, dups int64) {
	for _, r := range rows {
		produced, consumed, missing, dups = produced+r[0], consumed+r[1], missing+r[2], dups+r[3]
	}
	return
}

// TestIntegration_MirrorAuditTwoClusters is the paper's §4 set-up on one
// machine: two clusters (a ZooKeeper and two brokers each), an audited
// producer on the source, `kafka mirror-maker` copying to the target, and
// `kafka audit-check` comparing the source's monitoring events with what the
// target holds. It checks 0 missing in every window; then kills the mirror
// with SIGKILL mid-stream and restarts it (still 0 missing, duplicates
// counted); then deletes the oldest segment of one target partition by
// retention and checks that audit-check reports exactly its messages missing.
func TestIntegration_MirrorAuditTwoClusters(t *testing.T) {
	bin := kafkabin.Build(t)
	src := startCluster(t, nil)
	dst := startCluster(t, map[string]string{"log.file.size": "20000", "log.retention.hours": "1"})
	dir := t.TempDir()
	consumerCfg := filepath.Join(dir, "consumer.properties")
	os.WriteFile(consumerCfg, []byte(fmt.Sprintf("zk.connect=%s\ngroupid=mirror\nautocommit.interval.ms=200\n"+
		"zk.sessiontimeout.ms=2000\nrebalance.backoff.ms=500\nrebalance.retries.max=20\nfetcher.backoff.ms=50\n", src.zk)), 0o644)
	producerCfg := filepath.Join(dir, "producer.properties")
	os.WriteFile(producerCfg, []byte(fmt.Sprintf("zk.connect=%s\n", dst.zk)), 0o644)

	pc := producer.DefaultConfig()
	pc.ZkConnect = src.zk
	sp, err := producer.NewSync(pc)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	ap, err := audit.NewProducer(sp, audit.Config{Window: time.Second, PublishInterval: 200 * time.Millisecond, Host: "test-producer"})
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	produce := func(topic string, batches int) {
		for i := 0; i < batches; i++ {
			var b [][]byte
			for j := 0; j < 20; j++ {
				b = append(b, []byte(fmt.Sprintf("%s-%06d %s", topic, sent, strings.Repeat("v", 100))))
				sent++
			}
			if err := ap.Send(topic, -1, b...); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	startMirror := func() *exec.Cmd {
		cmd := exec.Command(bin, "mirror-maker", "--consumer.config", consumerCfg, "--producer.config", producerCfg,
			"--whitelist", "clicks.*", "--num.streams", "2", "--num.producers", "2")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if testing.Verbose() == false {
			cmd.Stdout, cmd.Stderr = nil, nil
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	// waitClean polls audit-check on the target until nothing is missing.
	waitClean := func(what, topic string) map[string][4]int64 {
		t.Helper()
		var out string
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			var code int
			var rows map[string][4]int64
			code, out, rows = auditCheck(t, bin, "--zookeeper", dst.zk, "--audit-zookeeper", src.zk, "--topic", topic)
			if p, c, m, _ := totals(rows); code == 0 && m == 0 && p > 0 && c >= p {
				t.Logf("%s: audit-check on the target:\n%s", what, out)
				return rows
			}
		}
		t.Fatalf("%s: the target never caught up:\n%s", what, out)
		return nil
	}

	// 1. Mirror what is there and what comes; a new topic appears mid-way.
	produce("clicks", 50)
	m := startMirror()
	produce("clicks", 50)
	produce("clicks-new", 20)
	if err := ap.Publish(); err != nil {
		t.Fatal(err)
	}
	rows := waitClean("mirror", "clicks")
	if _, _, _, d := totals(rows); d != 0 {
		t.Errorf("duplicates without any failure: %v", rows)
	}
	waitClean("a topic created on the source while the mirror runs", "clicks-new")

	// 2. SIGKILL the mirror while messages flow, then start it again.
	done := make(chan struct{})
	go func() { produce("clicks", 150); close(done) }()
	time.Sleep(700 * time.Millisecond)
	m.Process.Signal(syscall.SIGKILL)
	m.Wait()
	t.Logf("mirror killed with SIGKILL after %d messages were produced", sent)
	m = startMirror()
	<-done
	if err := ap.Close(); err != nil {
		t.Fatal(err)
	}
	rows = waitClean("after kill -9 and restart", "clicks")
	_, _, _, dups := totals(rows)
	t.Logf("after the restart: 0 missing, %d duplicated (at-least-once: resent since the last commit)", dups)
	m.Process.Signal(syscall.SIGTERM)
	m.Wait()

	// 3. Delete the oldest segment of one target partition by retention: the
	// messages it held that are nowhere else on the target must be reported
	// missing, in their windows, and nothing else. The partition is the first
	// on the target with several segments: which brokers the mirror's
	// producer wrote to depends on which had registered the new topic when it
	// looked (a 0.7 broker registers a topic after its first message).
	var l *log.Log
	var held []string
	for _, b := range dst.brokers {
		for p := range 2 {
			if pl, ok := b.Logs().Get("clicks", p); ok {
				held = append(held, fmt.Sprintf("broker %d clicks-%d: %d segments", b.ID, p, len(pl.Segments())))
				if l == nil && len(pl.Segments()) >= 2 {
					l = pl
				}
			}
		}
	}
	if l == nil {
		t.Fatalf("no clicks partition on the target with several segments (log.file.size): %v", held)
	}
	segs := l.Segments()
	copies := map[string]int{}   // payload → copies on the target
	inSeg := map[string]string{} // payload → window, for the segment to go
	for _, b := range dst.brokers {
		files, _ := filepath.Glob(filepath.Join(b.Dir, "clicks-*", "*.kafka"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			d := message.NewDeepIterator(data, 0)
			for d.Next() {
				e, err := audit.OpenEnvelope(d.Message().Payload())
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				copies[string(e.Payload)]++
				if f == segs[0].Path {
					inSeg[string(e.Payload)] = time.UnixMilli(audit.WindowOf(e.Time, time.Second)).UTC().Format("2006-01-02 15:04:05.000")
				}
			}
		}
	}
	want := map[string]int64{}
	for p, w := range inSeg {
		if copies[p] == 1 {
			want[w]++
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(segs[0].Path, old, old); err != nil {
		t.Fatal(err)
	}
	if n, err := l.DeleteOldSegments(time.Now()); err != nil || n != 1 {
		t.Fatalf("retention deleted %d segments (%v), want 1", n, err)
	}
	code, out, rows := auditCheck(t, bin, "--zookeeper", dst.zk, "--audit-zookeeper", src.zk, "--topic", "clicks")
	t.Logf("after retention deleted %s (%d messages, %d of them with no other copy):\n%s", filepath.Base(segs[0].Path), len(inSeg), sum(want), out)
	if code != 1 {
		t.Errorf("audit-check exit %d, want 1 (messages missing)", code)
	}
	for w, r := range rows {
		if r[2] != want[w] {
			t.Errorf("window %s: %d missing, want %d", w, r[2], want[w])
		}
	}
	for w, n := range want {
		if _, ok := rows[w]; !ok && n > 0 {
			t.Errorf("window %s with %d missing is not reported", w, n)
		}
	}
}

func sum(m map[string]int64) int {
	n := int64(0)
	for _, v := range m {
		n += v
	}
	return int(n)
}

// TestIntegration_EmbeddedMirror: 0.7.0's form, `kafka server-start
// server.properties consumer.properties`, mirrors the source cluster's
// whitelisted topics (a comma list, as 0.7.0 wrote them) into the broker it
// runs beside.
func TestIntegration_EmbeddedMirror(t *testing.T) {
	bin := kafkabin.Build(t)
	src := startCluster(t, nil)
	dir := t.TempDir()
	port := zktest.FreePort(t)
	os.WriteFile(filepath.Join(dir, "server.properties"), []byte(fmt.Sprintf(
		"brokerid=7\nhostname=127.0.0.1\nport=%d\nlog.dir=%s\nlog.default.flush.interval.ms=20\n", port, filepath.Join(dir, "logs"))), 0o644)
	os.WriteFile(filepath.Join(dir, "consumer.properties"), []byte(fmt.Sprintf(
		"zk.connect=%s\ngroupid=embedded\nautocommit.interval.ms=200\nmirror.topics.whitelist=events,other\nmirror.consumer.numthreads=2\n", src.zk)), 0o644)
	cmd := exec.Command(bin, "server-start", filepath.Join(dir, "server.properties"), filepath.Join(dir, "consumer.properties"))
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pc := producer.DefaultConfig()
	pc.ZkConnect = src.zk
	p, err := producer.NewSync(pc)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want := map[string]bool{}
	for i := 0; i < 10; i++ {
		var b [][]byte
		for j := 0; j < 20; j++ {
			m := fmt.Sprintf("event-%03d-%02d", i, j)
			want[m] = true
			b = append(b, []byte(m))
		}
		if err := p.Send("events", -1, b...); err != nil {
			t.Fatal(err)
		}
		p.Send("ignored", -1, []byte("not whitelisted"))
	}
	sc := consumer.NewSimpleConsumer(fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	defer sc.Close()
	got := map[string]bool{}
	for deadline := time.Now().Add(30 * time.Second); len(got) < len(want) && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		set, err := sc.Fetch("events", 0, 0, 1<<20)
		if err != nil {
			continue
		}
		for d := message.NewDeepIterator(set, 0); d.Next(); {
			got[string(d.Message().Payload())] = true
		}
	}
	if len(got) != len(want) {
		t.Fatalf("the embedded mirror copied %d of %d messages\n%s", len(got), len(want), logs.String())
	}
	if _, err := sc.Fetch("ignored", 0, 0, 1<<10); err == nil {
		if set, _ := sc.Fetch("ignored", 0, 0, 1<<10); len(set) > 0 {
			t.Errorf("a topic outside the whitelist was mirrored")
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("server-start with the embedded mirror did not stop cleanly: %v\n%s", err, logs.String())
	}
}
