package containers

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/compare/activemq"
	"github.com/kafkarepro/kafkarepro/compare/ours"
	"github.com/kafkarepro/kafkarepro/compare/rabbitmq"
	"github.com/kafkarepro/kafkarepro/experiments"
)

// requireImages skips under -short or when no Docker engine answers, and
// otherwise makes the images with EnsureImages (scripts/build-images.sh,
// reusing what exists), failing the test if they cannot be made.
func requireImages(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs Docker")
	}
	if _, err := DockerVersion(t.Context()); err != nil {
		t.Skipf("Docker is absent: %v", err)
	}
	repo := repoDir(t)
	var progress bytes.Buffer
	r, err := EnsureImages(t.Context(), repo, &progress)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	t.Logf("%s", r)
	return repo
}

// leftovers lists containers (any state) carrying label.
func leftovers(t *testing.T, label string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-a", "-q", "--filter", "label="+label).Output()
	if err != nil {
		t.Errorf("docker ps -a --filter label=%s: %v", label, err)
		return nil
	}
	return strings.Fields(string(out))
}

// newTestProvider returns a provider whose containers carry a label unique
// to this test, and checks at the very end that none of them is left.
func newTestProvider(t *testing.T, opts Options) *Provider {
	t.Helper()
	run := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	label := "kafka-repro.test=" + run
	t.Cleanup(func() { // registered first, so it runs last
		if ids := leftovers(t, label); len(ids) > 0 {
			t.Errorf("containers left behind with label %s: %v", label, ids)
			_ = exec.Command("docker", append([]string{"rm", "-f", "-v"}, ids...)...).Run()
		}
	})
	opts.Labels = map[string]string{"kafka-repro.test": run}
	opts.Log = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	p, err := NewProvider(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if _, err := os.Stat(p.DataRoot()); !os.IsNotExist(err) {
			t.Errorf("Close left %s behind (stat: %v)", p.DataRoot(), err)
		}
	})
	return p
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func start(ctx context.Context, t *testing.T, p *Provider, service string) compare.Server {
	t.Helper()
	began := time.Now()
	s, err := p.Start(ctx, service)
	if err != nil {
		t.Fatalf("Start(%s): %v", service, err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	ep := s.Endpoint()
	t.Logf("%s: %s:%d in %s, version %q, data %s", service, ep.Host, ep.Port, time.Since(began).Round(time.Millisecond), ep.Version, ep.DataDir)
	if ep.LogPath == "" || ep.DataDir == "" || ep.Version == "" {
		t.Errorf("%s: incomplete endpoint %+v", service, ep)
	}
	return s
}

// roundTrip produces n messages of 200 bytes through sys and reads them back.
func roundTrip(ctx context.Context, t *testing.T, sys compare.System, topic string, n, batch int) {
	t.Helper()
	var sent, got atomic.Int64
	pr, err := sys.Produce(ctx, compare.ProduceSpec{Topic: topic, Messages: n, MessageSize: 200, Batch: batch, Sent: &sent})
	if err != nil {
		t.Fatalf("%s: produce: %v", sys.Name(), err)
	}
	if pr.Messages != int64(n) || sent.Load() != int64(n) {
		t.Fatalf("%s: produced %d (counter %d), want %d", sys.Name(), pr.Messages, sent.Load(), n)
	}
	// RabbitMQ writes its queue index asynchronously: give the store a few
	// seconds to hold the payload.
	var disk int64
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		disk, err = sys.DiskBytes()
		if err != nil || disk >= int64(n)*200 || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || disk <= 0 {
		t.Errorf("%s: DiskBytes = %d, %v; want the store's size on the host", sys.Name(), disk, err)
	} else if disk < int64(n)*200 {
		t.Logf("%s: DiskBytes = %d after 15 s, less than the %d payload bytes (store not yet written)", sys.Name(), disk, n*200)
	}
	cr, err := sys.Consume(ctx, compare.ConsumeSpec{Topic: topic, Messages: n, MessageSize: 200,
		PrefetchMessages: 1000, PrefetchBytes: 200 * 1024, Received: &got})
	if err != nil {
		t.Fatalf("%s: consume: %v", sys.Name(), err)
	}
	if cr.Messages != int64(n) || got.Load() != int64(n) {
		t.Fatalf("%s: consumed %d (counter %d), want %d", sys.Name(), cr.Messages, got.Load(), n)
	}
	t.Logf("%s: %d messages produced in %s, consumed in %s, %d bytes on disk", sys.Name(), n, pr.Elapsed, cr.Elapsed, disk)
}

// TestIntegration_Provider starts each server through testcontainers-go,
// runs a small produce/consume through its adapter, and checks that every
// container and host folder is gone afterwards.
func TestIntegration_Provider(t *testing.T) {
	requireImages(t)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	p := newTestProvider(t, Options{KafkaZooKeeper: true})

	zkSrv := start(ctx, t, p, "zookeeper")
	zkEp := zkSrv.Endpoint()
	if reply, err := fourLetter(ctx, fmt.Sprintf("%s:%d", zkEp.Host, zkEp.Port), "srvr"); err != nil || !strings.Contains(reply, "Mode: standalone") {
		t.Fatalf("zookeeper srvr: %q, %v", reply, err)
	}

	kSrv := start(ctx, t, p, "kafka")
	props := kSrv.(interface{ Properties() map[string]string }).Properties()
	if props["enable.zookeeper"] != "true" || props["hostname"] == "" {
		t.Errorf("broker properties %v: want registration in ZooKeeper under the container address", props)
	}
	kSys, err := ours.New(kSrv.Endpoint(), ours.Options{ServerProperties: props})
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(ctx, t, kSys, "containers-kafka", 5000, 50)
	kSys.Close()
	// §3.2: the broker registered itself in ZooKeeper, under an address clients can use.
	conn, _, err := zk.Connect([]string{fmt.Sprintf("%s:%d", zkEp.Host, zkEp.Port)}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	reg, _, err := conn.Get("/brokers/ids/0")
	conn.Close()
	if err != nil || !strings.HasSuffix(string(reg), ":"+props["hostname"]+":9092") {
		t.Errorf("/brokers/ids/0 = %q, %v; want it to end with :%s:9092", reg, err, props["hostname"])
	}
	if err := kSrv.Stop(); err != nil {
		t.Errorf("stop kafka: %v", err)
	}
	if _, err := os.Stat(kSrv.Endpoint().DataDir); !os.IsNotExist(err) {
		t.Errorf("Stop left the broker's data %s (stat: %v)", kSrv.Endpoint().DataDir, err)
	}
	if err := zkSrv.Stop(); err != nil {
		t.Errorf("stop zookeeper: %v", err)
	}

	aSrv := start(ctx, t, p, "activemq")
	aSys, err := activemq.New(aSrv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(ctx, t, aSys, "containers-activemq", 2000, 1)
	t.Logf("activemq settings: %v", aSys.Settings())
	aSys.Close()
	if err := aSrv.Stop(); err != nil {
		t.Errorf("stop activemq: %v", err)
	}

	rSrv := start(ctx, t, p, "rabbitmq")
	rSys, err := rabbitmq.New(rSrv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(ctx, t, rSys, "containers-rabbitmq", 2000, 1)
	t.Logf("rabbitmq settings: %v", rSys.Settings())
	rSys.Close()
	if err := rSrv.Stop(); err != nil {
		t.Errorf("stop rabbitmq: %v", err)
	}
}

// TestIntegration_ProviderStartFailure: a server that cannot start returns
// an error naming its log, and leaves no container behind.
func TestIntegration_ProviderStartFailure(t *testing.T) {
	requireImages(t)
	p := newTestProvider(t, Options{
		StartTimeout:    20 * time.Second,
		KafkaProperties: map[string]string{"num.partitions": "0"}, // refused by the broker's config check
	})
	_, err := p.Start(t.Context(), "kafka")
	if err == nil {
		t.Fatal("a broker with num.partitions=0 started")
	}
	if !strings.Contains(err.Error(), "num.partitions") {
		t.Errorf("error does not show the cause: %v", err)
	}
	m := regexp.MustCompile(`log=([^;)]+)`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("error does not name the log: %v", err)
	}
	b, rerr := os.ReadFile(m[1])
	if rerr != nil || !strings.Contains(string(b), "num.partitions") {
		t.Errorf("log %s named by the error: %q, %v", m[1], b, rerr)
	}
	os.Remove(m[1])
}

// TestIntegration_QuickExperiment runs the §5 producer and consumer tests,
// shortened, against servers in containers, through package experiments.
func TestIntegration_QuickExperiment(t *testing.T) {
	requireImages(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	p := newTestProvider(t, Options{})
	connect := map[string]func(compare.Server) (compare.System, error){
		"kafka": func(s compare.Server) (compare.System, error) {
			return ours.New(s.Endpoint(), ours.Options{ServerProperties: s.(interface{ Properties() map[string]string }).Properties()})
		},
		"activemq": func(s compare.Server) (compare.System, error) { return activemq.New(s.Endpoint()) },
		"rabbitmq": func(s compare.Server) (compare.System, error) { return rabbitmq.New(s.Endpoint()) },
	}
	var targets []experiments.Target
	for _, name := range []string{"kafka", "activemq", "rabbitmq"} {
		targets = append(targets, experiments.Target{Name: name, Open: func(ctx context.Context) (compare.System, func() error, error) {
			srv, err := p.Start(ctx, name)
			if err != nil {
				return nil, nil, err
			}
			sys, err := connect[name](srv)
			if err != nil {
				srv.Stop()
				return nil, nil, err
			}
			return sys, func() error { sys.Close(); return srv.Stop() }, nil
		}})
	}
	cfg := experiments.DefaultConfig()
	cfg.Messages = 20_000
	cfg.TestTimeout = 5 * time.Minute
	reports, err := experiments.Run(ctx, cfg, targets)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		if len(r.Errors) > 0 {
			t.Errorf("%s: %v", r.Name, r.Errors)
		}
		for _, pr := range r.Producer {
			t.Logf("%s producer batch %d: %.0f msg/s (%d msgs, %.2fs) %s", r.Name, pr.Batch, pr.MsgPerS, pr.Msgs, pr.Seconds, pr.Error)
			if !pr.OK() {
				t.Errorf("%s producer batch %d failed: %s", r.Name, pr.Batch, pr.Error)
			}
		}
		if r.Consumer == nil || !r.Consumer.OK() {
			t.Errorf("%s: consumer test failed: %+v", r.Name, r.Consumer)
		} else {
			t.Logf("%s consumer: %.0f msg/s (%d msgs)", r.Name, r.Consumer.MsgPerS, r.Consumer.Msgs)
		}
		for _, st := range r.Storage {
			t.Logf("%s storage batch %d: %.1f bytes/message (%s)", r.Name, st.Batch, st.BytesPerMessage, st.Error)
			if st.Error != "" || st.BytesPerMessage < 200 {
				t.Errorf("%s storage batch %d: %+v", r.Name, st.Batch, st)
			}
		}
	}
}
