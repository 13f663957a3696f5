package clientstest

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/internal/faults"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A replicated topic through the Kafka protocol: three broker processes and ZooKeeper (kafka/internal/faults),
// one partition on all three, a client producing with acks=-1 while the leader is killed with SIGKILL. The
// client must find the new leader by itself (NOT_LEADER_FOR_PARTITION or a dead connection, then Metadata),
// and nothing it was told is written may be missing when the partition is read back.

// failoverResult is what one client's run came to.
type failoverResult struct {
	acked, readBack, lost, duplicated int
}

func (r failoverResult) String() string {
	return fmt.Sprintf("acknowledged %d, read back %d, lost %d, duplicated %d", r.acked, r.readBack, r.lost, r.duplicated)
}

// tally compares the values read back with those acknowledged.
func tally(acked map[string]bool, read []string) failoverResult {
	r := failoverResult{acked: len(acked), readBack: len(read)}
	seen := map[string]int{}
	for _, v := range read {
		seen[v]++
	}
	for v := range acked {
		if seen[v] == 0 {
			r.lost++
		}
	}
	for _, n := range seen {
		r.duplicated += n - 1
	}
	return r
}

func startFailoverCluster(t *testing.T, topic string) *faults.Cluster {
	c := faults.Start(t, faults.Options{Brokers: 3})
	c.CreateTopic(topic, replication.Assignment{{0, 1, 2}})
	c.WaitISR(topic, 0, 3, time.Minute)
	return c
}

// readAll reads partition 0 of topic from the start with franz-go until n values or a quiet spell.
func readAll(t *testing.T, seeds []string, topic string) []string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	for quiet := 0; quiet < 3; {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(c)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)); n++ })
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
	return out
}

func TestIntegration_LeaderKilled08(t *testing.T) {
	if testing.Short() {
		t.Skip("three broker processes: not in -short")
	}
	t.Run("franz-go", func(t *testing.T) {
		const topic = "failover-franz"
		c := startFailoverCluster(t, topic)
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		acked := map[string]bool{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		killAt, stopAt := time.Now().Add(time.Second), time.Now().Add(4*time.Second)
		killed := false
		for i := 0; time.Now().Before(stopAt); i++ {
			if !killed && time.Now().After(killAt) {
				c.Leader(topic, 0).Kill()
				killed = true
			}
			v := "v-" + strconv.Itoa(i)
			wg.Add(1)
			cl.Produce(context.Background(), &kgo.Record{Topic: topic, Partition: 0, Key: []byte("k-" + strconv.Itoa(i)), Value: []byte(v)},
				func(_ *kgo.Record, err error) {
					if err == nil {
						mu.Lock()
						acked[v] = true
						mu.Unlock()
					}
					wg.Done()
				})
			time.Sleep(200 * time.Microsecond)
		}
		wg.Wait()
		res := tally(acked, readAll(t, c.Addrs(), topic))
		t.Logf("franz-go, acks=-1, leader killed with SIGKILL: %s", res)
		if res.acked == 0 || res.lost > 0 {
			t.Errorf("franz-go: %s; want some acknowledged and none lost", res)
		}
	})
	t.Run("kcat", func(t *testing.T) {
		installClients(t)
		const topic = "failover-kcat"
		c := startFailoverCluster(t, topic)
		cmd := exec.Command("kcat", "-P", "-b", strings.Join(c.Addrs(), ","), "-t", topic, "-p", "0", "-K", ":",
			"-X", "acks=all", "-X", "message.timeout.ms=30000")
		in, _ := cmd.StdinPipe()
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var failedLines []string
		done := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				failedLines = append(failedLines, sc.Text())
			}
			close(done)
		}()
		sent := 0
		killAt, stopAt := time.Now().Add(time.Second), time.Now().Add(4*time.Second)
		killed := false
		w := bufio.NewWriter(in)
		for time.Now().Before(stopAt) {
			if !killed && time.Now().After(killAt) {
				c.Leader(topic, 0).Kill()
				killed = true
			}
			for range 20 {
				fmt.Fprintf(w, "k-%d:v-%d\n", sent, sent)
				sent++
			}
			w.Flush()
			time.Sleep(5 * time.Millisecond)
		}
		in.Close()
		<-done
		err := cmd.Wait()
		// kcat reports each message it could not deliver on standard error; every other one was
		// acknowledged by the partition's leader with acks=all.
		failed := 0
		for _, l := range failedLines {
			if strings.Contains(l, "Delivery failed") {
				failed++
			}
		}
		acked := map[string]bool{}
		for i := 0; i < sent; i++ {
			acked["v-"+strconv.Itoa(i)] = true
		}
		read := readAll(t, c.Addrs(), topic)
		res := tally(acked, read)
		res.acked = sent - failed
		res.lost = max(res.lost-failed, 0)
		t.Logf("kcat, acks=all, leader killed with SIGKILL: sent %d, %s (kcat: %v, %d lines on stderr)", sent, res, err, len(failedLines))
		if failed > 0 || err != nil {
			t.Logf("kcat's standard error:\n%s", strings.Join(failedLines, "\n"))
		}
		if res.acked == 0 || res.lost > 0 {
			t.Errorf("kcat: %s; want some acknowledged and none lost", res)
		}
	})
}
