package etl

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/kafkabin"
	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	kafkabin.Remove()
	os.Exit(code)
}

// TestIntegration_LoaderKilledTenTimes: `kafka load` is killed with SIGKILL
// at ten random moments, with more messages arriving between runs, and run
// again each time; a last run finishes. The output must hold every message
// sent exactly once (paper §4: data and offsets stored together, only when
// the job succeeds).
func TestIntegration_LoaderKilledTenTimes(t *testing.T) {
	connect := zktest.Start(t)
	b := brokertest.Start(t, 0, brokertest.Options{ZKConnect: connect,
		Props: map[string]string{"num.partitions": "2", "log.flush.interval": "1000", "log.default.flush.interval.ms": "20"}})
	bin := kafkabin.Build(t)
	cfg := producer.DefaultConfig()
	cfg.BrokerList = "0:" + b.HostPort()
	p, err := producer.NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	out := filepath.Join(t.TempDir(), "out")
	pad := strings.Repeat("x", 180)
	sent := map[string]int{}
	var ends [2]int64
	produce := func(round, n int) {
		for part := int32(0); part < 2; part++ {
			var batch [][]byte
			for i := 0; i < n; i++ {
				m := fmt.Sprintf("r%02d-p%d-%06d-%s", round, part, i, pad)
				sent[m]++
				batch = append(batch, []byte(m))
				ends[part] += int64(message.Size(message.MagicV1, len(m)))
				if len(batch) == 50 || i == n-1 {
					if err := p.Send("load", part, batch...); err != nil {
						t.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			waitEnd(t, b.HostPort(), "load", part, ends[part])
		}
	}
	run := func() *exec.Cmd {
		cmd := exec.Command(bin, "load", "--zookeeper", connect, "--topic", "load", "--output", out, "--fetch-size", "16384")
		cmd.Stdout, cmd.Stderr = nil, nil
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	produce(0, 20000)
	// Time one whole run on a copy of the state, so the kills can be spread over a run's length.
	start := time.Now()
	probe := exec.Command(bin, "load", "--zookeeper", connect, "--topic", "load", "--output", filepath.Join(t.TempDir(), "probe"), "--fetch-size", "16384")
	if o, err := probe.CombinedOutput(); err != nil {
		t.Fatalf("probe run: %v\n%s", err, o)
	}
	full := time.Since(start)
	// Kills fall in [0, 3 × that); each round adds a tenth of the first load, so
	// some kills land before a commit (leaving a temporary directory) and some after: some land before the commit, some after it.
	t.Logf("one run over %d messages takes %v; killing at uniform random moments in [0, %v)", len(sent), full, 3*full)
	rng := rand.New(rand.NewPCG(13, 4))
	committedByKilled := 0
	for k := 1; k <= 10; k++ {
		before, _ := Runs(out)
		cmd := run()
		at := time.Duration(rng.Int64N(int64(3 * full)))
		time.Sleep(at)
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		after, _ := Runs(out)
		killed := err != nil && strings.Contains(err.Error(), "killed")
		if len(after) > len(before) {
			committedByKilled++
		}
		t.Logf("kill %2d at %-12v killed=%-5v runs %d -> %d, leftovers %v", k, at, killed, len(before), len(after), temporaries(out))
		produce(k, 2000)
	}
	cmd := exec.Command(bin, "load", "--zookeeper", connect, "--topic", "load", "--output", out)
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("final run: %v\n%s", err, o)
	}
	got := map[string]int{}
	for _, m := range readAll(t, out) {
		got[m]++
	}
	lost, dup := 0, 0
	for m, n := range sent {
		if got[m] == 0 {
			lost++
		} else if got[m] > n {
			dup += got[m] - n
		}
	}
	for m := range got {
		if sent[m] == 0 {
			t.Errorf("output holds %q, never sent", m)
		}
	}
	runs, _ := Runs(out)
	t.Logf("sent %d, in the output %d distinct, lost %d, duplicated %d; %d runs committed (%d of them by a run that was then killed)",
		len(sent), len(got), lost, dup, len(runs), committedByKilled)
	if lost != 0 || dup != 0 || len(temporaries(out)) != 0 {
		t.Fatalf("lost %d, duplicated %d, leftovers %v", lost, dup, temporaries(out))
	}
}

func temporaries(dir string) []string {
	var out []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
}
