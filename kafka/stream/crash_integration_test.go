package stream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// The crash test's topology: "key,time-ms,..." messages counted per key in tumbling windows of 100 ms with
// 50 ms of grace.
const (
	crashGroup  = "counts"
	crashInput  = "clicks"
	crashOutput = "click-counts"
)

func crashStage(t testing.TB) Stage { return crashStageTo(t, crashOutput) }

func crashStageTo(t testing.TB, output string) Stage {
	return Stage{Input: crashInput, Key: KeyField(',', 0), Time: TimeField(',', 1), Processors: []ProcessorFactory{
		windowed(t, WindowedConfig{Window: tumbling(t, 100*time.Millisecond), Grace: 50 * time.Millisecond, Aggregation: Count(), Output: output}),
	}}
}

// TestProcessorProcess is not a test: it is the processor process of TestIntegration_ProcessorKilledMidStream,
// the test binary run again with STREAM_PROCESSOR_ZK set, so that kill -9 kills a real process.
func TestProcessorProcess(t *testing.T) {
	zkc := os.Getenv("STREAM_PROCESSOR_ZK")
	if zkc == "" {
		t.Skip("the processor process of TestIntegration_ProcessorKilledMidStream")
	}
	lg := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	gc := consumer.DefaultGroupConfig()
	gc.ZkSessionTimeout, gc.ZkSyncTime, gc.RebalanceRetriesMax, gc.FetcherBackoff = 2*time.Second, 200*time.Millisecond, 50, 20*time.Millisecond
	r, err := NewRunner(RunnerConfig{Group: crashGroup, ZkConnect: zkc, Stages: []Stage{crashStage(t)}, Consumer: gc,
		CheckpointEvery: 5000, CheckpointInterval: time.Second, Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "READY %s\n", r.ID())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "DONE %v\n", r.Report())
}

// processorProc is one processor process.
type processorProc struct {
	cmd *exec.Cmd
	log string
}

func startProcessor(t *testing.T, zkc, name string) *processorProc {
	t.Helper()
	p := &processorProc{log: filepath.Join(t.TempDir(), name+".log")}
	p.cmd = exec.Command(os.Args[0], "-test.run=^TestProcessorProcess$", "-test.v")
	p.cmd.Env = append(os.Environ(), "STREAM_PROCESSOR_ZK="+zkc)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout = nil
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	f, _ := os.Create(p.log)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "READY ") {
				once.Do(func() { close(ready) })
			}
			fmt.Fprintln(f, sc.Text())
		}
		f.Close()
	}()
	t.Cleanup(func() { p.signal(syscall.SIGKILL) })
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("processor %s did not start; see %s", name, p.log)
	}
	return p
}

func (p *processorProc) signal(s syscall.Signal) {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Signal(s)
		p.cmd.Wait()
	}
}

// crashInputs makes n messages of 60 keys over ~n/10 ms of event time, delivered up to 30 ms out of order and
// every 400th one 300 ms late (beyond the grace period), with two messages in every 1,000 that have no time
// or no key, then one message per partition far ahead that closes every window. parts maps each partition index to the messages it gets, in order.
func crashInputs(n int, nparts int) (perPart [][][]byte) {
	rng := rand.New(rand.NewPCG(11, 12))
	perPart = make([][][]byte, nparts)
	pad := strings.Repeat("x", 150)
	part := func(key string) int { return int(producer.HashKey([]byte(key)) % uint32(nparts)) }
	for i := range n {
		key := fmt.Sprintf("item-%02d", rng.IntN(60))
		t := int64(i/10) - rng.Int64N(30)
		if i%400 == 399 {
			t -= 300
		}
		p := part(key)
		perPart[p] = append(perPart[p], []byte(fmt.Sprintf("%s,%d,%s", key, t, pad)))
		switch i % 1000 { // bad input: counted skips, in every partition
		case 500:
			perPart[i%nparts] = append(perPart[i%nparts], []byte("no time in this one"))
		case 900:
			perPart[i%nparts] = append(perPart[i%nparts], []byte(",123,no key"))
		}
	}
	for p := range nparts {
		for k := 0; ; k++ {
			key := fmt.Sprintf("end-%d", k)
			if part(key) == p {
				perPart[p] = append(perPart[p], []byte(fmt.Sprintf("%s,%d,end", key, int64(n/10)+100000)))
				break
			}
		}
	}
	return perPart
}

// §6 over §3.2: a group of three processor processes counts a 6-partition topic in tumbling windows; one
// is killed with SIGKILL while messages stream in, and started again. The package doc's guarantees: every
// task's final checkpoint is byte for byte the one an uninterrupted run of its partition makes (state and
// report: every message counted once, none twice, none missed), and the output topic holds exactly the
// uninterrupted run's per-window counts, some of them published twice with the same value (at-least-once).
func TestIntegration_ProcessorKilledMidStream(t *testing.T) {
	start := time.Now()
	zkc := zktest.Start(t)
	cluster := brokertest.StartCluster(t, 2, brokertest.Options{ZKConnect: zkc, Props: map[string]string{
		"num.partitions": "3", "log.flush.interval": "100", "log.default.flush.interval.ms": "20", "zk.sessiontimeout.ms": "2000"}})
	parts := []producer.Partition{{BrokerID: 0, Part: 0}, {BrokerID: 0, Part: 1}, {BrokerID: 0, Part: 2},
		{BrokerID: 1, Part: 0}, {BrokerID: 1, Part: 1}, {BrokerID: 1, Part: 2}}
	pcfg := producer.DefaultConfig()
	pcfg.BrokerList = cluster.BrokerList()
	prod, err := producer.NewSync(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()

	const n = 40000
	in := crashInputs(n, len(parts))
	total := 0
	// The uninterrupted run: one task per partition over the same messages, at the offsets the log gives them.
	refCP := map[string][]byte{}
	want := map[string]int64{} // "key@start" → count
	for i, msgs := range in {
		name := zk.PartitionName(parts[i].BrokerID, int(parts[i].Part))
		out := &MemoryEmitter{}
		task, err := NewTask(crashStage(t), name, out)
		if err != nil {
			t.Fatal(err)
		}
		off := int64(0)
		for _, m := range msgs {
			next := off + int64(message.Size(pcfg.Magic, len(m)))
			if err := task.Process(off, next, m); err != nil {
				t.Fatal(err)
			}
			off = next
		}
		cp, _ := task.Checkpoint()
		refCP[name] = bytes.Clone(cp)
		for _, e := range out.Out {
			r, _ := ParseResult(e.Value)
			want[fmt.Sprintf("%s@%d", r.Key, r.Start)] = r.Value
		}
		total += len(msgs)
	}
	// Create the topic's six partitions before any processor looks (the first message of each, sent now).
	for i, p := range parts {
		if err := prod.SendTo(p.BrokerID, crashInput, p.Part, in[i][0]); err != nil {
			t.Fatal(err)
		}
	}
	c, err := zk.Connect(zkc, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitUntil(t, 10*time.Second, "the topic registered on both brokers", func() bool {
		ids, _ := c.Children(zk.BrokerTopicPath(crashInput))
		return len(ids) == 2
	})

	procs := []*processorProc{startProcessor(t, zkc, "p0"), startProcessor(t, zkc, "p1"), startProcessor(t, zkc, "p2")}
	waitUntil(t, 30*time.Second, "checkpoints of all six partitions", func() bool {
		k, _ := c.Children(zk.ConsumerGroupPath(crashGroup) + "/checkpoints/" + crashInput)
		return len(k) == 6
	})
	t.Logf("%v: three processors running, every partition has a checkpoint", time.Since(start).Round(time.Millisecond))

	// Stream the rest in, 50 messages per partition at a time, about 4,000 messages a second.
	sent := make(chan int, 1)
	go func() {
		pos := make([]int, len(parts))
		for i := range pos {
			pos[i] = 1
		}
		count := len(parts)
		for left := true; left; {
			left = false
			for i, p := range parts {
				end := min(pos[i]+50, len(in[i]))
				if pos[i] < end {
					if err := prod.SendTo(p.BrokerID, crashInput, p.Part, in[i][pos[i]:end]...); err != nil {
						t.Error(err)
						sent <- count
						return
					}
					count += end - pos[i]
					pos[i] = end
				}
				left = left || pos[i] < len(in[i])
			}
			time.Sleep(70 * time.Millisecond)
		}
		sent <- count
	}()
	time.Sleep(3 * time.Second)
	procs[1].signal(syscall.SIGKILL)
	killedAt := time.Since(start)
	time.Sleep(3 * time.Second) // its session expires; the other two take its partitions
	procs[1] = startProcessor(t, zkc, "p1-again")
	restartedAt := time.Since(start)
	produced := <-sent
	t.Logf("%v: produced %d of %d messages; processor p1 killed with SIGKILL at %v, started again at %v", time.Since(start).Round(time.Millisecond),
		produced, total, killedAt.Round(time.Millisecond), restartedAt.Round(time.Millisecond))

	// Every task's checkpoint reaches the uninterrupted run's, byte for byte.
	cps := map[string][]byte{}
	ok := waitUntilOK(45*time.Second, func() bool {
		for name, ref := range refCP {
			data, _, err := c.GetVersion(CheckpointPath(crashGroup, crashInput, name))
			if err != nil || !bytes.Equal(data, ref) {
				return false
			}
			cps[name] = data
		}
		return true
	})
	var sum Report
	for _, name := range sortedKeys(refCP) {
		data, _, _ := c.GetVersion(CheckpointPath(crashGroup, crashInput, name))
		off, rep, err := ReadCheckpoint(data)
		refOff, refRep, _ := ReadCheckpoint(refCP[name])
		t.Logf("checkpoint %s: offset %d (uninterrupted %d), %v (uninterrupted: %v), same bytes: %v, err %v", name, off, refOff, rep, refRep, bytes.Equal(data, refCP[name]), err)
		sum.Add(rep)
	}
	if !ok {
		for _, p := range procs {
			t.Logf("processor log %s", p.log)
		}
		t.Fatalf("the checkpoints did not all reach the uninterrupted run's in 45 s")
	}
	if sum.Read != int64(total) || sum.SkippedTime != n/1000 || sum.SkippedKey != n/1000 {
		t.Errorf("the checkpoints count %d messages read (%d were sent), %d without time and %d without key (want %d each)",
			sum.Read, total, sum.SkippedTime, sum.SkippedKey, n/1000)
	}

	// The output topic: every window's count exactly, duplicates the same line again.
	// The last results become visible when the brokers flush (§3.1), a few ms after the last checkpoints.
	got, lines := readAllResults(t, cluster, parts, crashOutput, len(want))
	dups, missing, wrong := 0, 0, 0
	for w, v := range want {
		vs := got[w]
		if len(vs) == 0 {
			missing++
			continue
		}
		dups += len(vs) - 1
		for _, x := range vs {
			if x != v {
				wrong++
				t.Errorf("window %s: published %d, the uninterrupted run counts %d", w, x, v)
			}
		}
	}
	extra := 0
	for w := range got {
		if _, ok := want[w]; !ok {
			extra++
		}
	}
	t.Logf("windows: %d in the uninterrupted run; output topic: %d result lines, %d distinct windows counted, %d duplicated, %d missing, %d wrong, %d not in the uninterrupted run; late messages %d; %v",
		len(want), lines, len(got), dups, missing, wrong, extra, sum.Late, time.Since(start).Round(time.Millisecond))
	if missing != 0 || extra != 0 || wrong != 0 {
		t.Errorf("the output topic differs from the uninterrupted run")
	}
	for _, p := range procs {
		p.signal(syscall.SIGTERM)
	}

	// An uninterrupted run through a Runner too: a new group, one processor in this process, the same input.
	clean := crashGroup + "-uninterrupted"
	r, err := NewRunner(RunnerConfig{Group: clean, ZkConnect: zkc, Stages: []Stage{crashStageTo(t, crashOutput+"-uninterrupted")},
		CheckpointEvery: 5000, CheckpointInterval: time.Second, Logger: brokertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("the uninterrupted Runner: %v", err)
		}
	}()
	if !waitUntilOK(30*time.Second, func() bool {
		for name, cp := range cps {
			data, _, err := c.GetVersion(CheckpointPath(clean, crashInput, name))
			if err != nil || !bytes.Equal(data, cp) {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the uninterrupted Runner's checkpoints did not reach the killed group's in 30 s (report %v)", r.Report())
	}
	gotClean, linesClean := readAllResults(t, cluster, parts, crashOutput+"-uninterrupted", len(want))
	same := 0
	for w, vs := range gotClean {
		if len(vs) != 1 || len(got[w]) == 0 || got[w][0] != vs[0] {
			t.Errorf("window %s: uninterrupted Runner %v, killed group %v", w, vs, got[w])
			continue
		}
		same++
	}
	t.Logf("uninterrupted Runner: 6 checkpoints byte for byte the killed group's; %d result lines, %d windows, %d equal to the killed group's, %d in the killed group only",
		linesClean, len(gotClean), same, len(got)-same)
	if len(gotClean) != len(got) {
		t.Errorf("the uninterrupted Runner counted %d windows, the killed group %d", len(gotClean), len(got))
	}
}

// readAllResults is readResults until it finds the results of windows windows, for at most 10 s.
func readAllResults(t *testing.T, cluster brokertest.Cluster, parts []producer.Partition, topic string, windows int) (map[string][]int64, int) {
	t.Helper()
	var got map[string][]int64
	var lines int
	waitUntilOK(10*time.Second, func() bool {
		got, lines = readResults(t, cluster, parts, topic)
		return len(got) >= windows
	})
	return got, lines
}

// readResults reads every final result of the output topic: window "key@start" → the values published.
func readResults(t *testing.T, cluster brokertest.Cluster, parts []producer.Partition, topic string) (map[string][]int64, int) {
	t.Helper()
	got := map[string][]int64{}
	lines := 0
	for _, p := range parts {
		sc := consumer.NewSimpleConsumer(cluster[p.BrokerID].HostPort(), 10*time.Second)
		it := consumer.NewPartitionIterator(sc, topic, p.Part, 0, 0)
		for it.Poll() {
			r, err := ParseResult(it.Payload())
			if err != nil {
				t.Errorf("%d-%d offset %d: %v", p.BrokerID, p.Part, it.Offset(), err)
				continue
			}
			lines++
			if r.Kind == Final {
				w := fmt.Sprintf("%s@%d", r.Key, r.Start)
				got[w] = append(got[w], r.Value)
			}
		}
		sc.Close()
	}
	return got, lines
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !waitUntilOK(d, cond) {
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

func waitUntilOK(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// The deposed-task rule of the package doc against ZooKeeper itself: ZKStore's version-conditional set
// refuses the write of a task that restored an older checkpoint than the current one.
func TestIntegration_ZKStoreDeposedTask(t *testing.T) {
	c, err := zk.Connect(zktest.Start(t), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	store := NewZKStore(c, "g")
	deposedCase(t, store)
	data, _, err := c.GetVersion(CheckpointPath("g", "in", "0-0"))
	if _, rep, err2 := ReadCheckpoint(data); err != nil || err2 != nil || rep.Read != 200 {
		t.Errorf("the node holds a checkpoint of %d messages (%v, %v), want the winner's 200", rep.Read, err, err2)
	}
	if _, err := store.Save("in", "0-1", make([]byte, MaxCheckpoint+1), NoCheckpoint); !errors.Is(err, ErrStateTooLarge) {
		t.Errorf("a checkpoint over the limit: %v", err)
	}
	if ok, _ := c.Exists(CheckpointPath("g", "in", "0-1")); ok {
		t.Error("the refused checkpoint was written")
	}
}
