package stream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// A Runner in this process over a replicated topic (docs/PROTOCOL.md §10: partitions named by number, read
// from their leaders): each partition's checkpoint reports what a task given the partition's messages in
// order reports, every message read once.
func TestIntegration_RunnerReplicatedTopic(t *testing.T) {
	zkc := zktest.Start(t)
	brokertest.StartCluster(t, 3, brokertest.Options{ZKConnect: zkc, Props: map[string]string{
		"replica.lag.time.max.ms": "1500", "replica.fetch.wait.max.ms": "100", "zk.sessiontimeout.ms": "2000",
		"log.flush.interval": "100", "log.default.flush.interval.ms": "20"}})
	c, err := zk.Connect(zkc, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const in = "views"
	if err := replication.CreateTopic(c, in, replication.Assignment{{0, 1, 2}, {1, 2, 0}}); err != nil {
		t.Fatal(err)
	}
	for p := range 2 {
		waitUntil(t, 20*time.Second, fmt.Sprintf("a leader for %s-%d", in, p), func() bool {
			s, err := replication.ReadState(c, in, p)
			return err == nil && s.Leader >= 0
		})
	}
	pcfg := producer.DefaultConfig()
	pcfg.ZkConnect, pcfg.RequiredAcks = zkc, 1
	prod, err := producer.NewSync(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()

	st := Stage{Input: in, Key: KeyField(',', 0), Time: TimeField(',', 1), Processors: []ProcessorFactory{
		windowed(t, WindowedConfig{Window: tumbling(t, 50*time.Millisecond), Aggregation: Count(), Output: "view-counts"})}}
	ref := [2]*Task{}
	for p := range ref {
		ref[p], _ = NewTask(st, fmt.Sprint(p), &MemoryEmitter{})
	}
	send := func(key string, ms int64) {
		m := []byte(fmt.Sprintf("%s,%d,x", key, ms))
		if err := prod.SendKeyed(in, []byte(key), m); err != nil {
			t.Fatal(err)
		}
		p := producer.DefaultPartitioner{}.Partition([]byte(key), 2)
		if err := ref[p].Process(0, 0, m); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 1000 {
		send(fmt.Sprintf("page-%d", i%13), int64(i))
	}
	for i := range 8 {
		send(fmt.Sprintf("end-%d", i), 100000)
	}

	r, err := NewRunner(RunnerConfig{Group: "views-g", ZkConnect: zkc, Stages: []Stage{st}, CheckpointInterval: 200 * time.Millisecond,
		Logger: brokertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	ok := waitUntilOK(30*time.Second, func() bool {
		for p := range ref {
			data, _, err := c.GetVersion(CheckpointPath("views-g", in, fmt.Sprint(p)))
			if err != nil {
				return false
			}
			if _, rep, _ := ReadCheckpoint(data); rep.String() != ref[p].Report().String() {
				return false
			}
		}
		return true
	})
	for p := range ref {
		data, _, _ := c.GetVersion(CheckpointPath("views-g", in, fmt.Sprint(p)))
		off, rep, err := ReadCheckpoint(data)
		t.Logf("partition %d: checkpoint at offset %d, %v (%v); a task given its messages: %v", p, off, rep, err, ref[p].Report())
	}
	t.Logf("runner tasks: %v, report %v", r.Tasks(), r.Report())
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	// After Run, every task has stopped: the runner's report counts each partition once, so its totals are
	// the messages read and the results published.
	var want Report
	for p := range ref {
		want.Add(ref[p].Report())
	}
	if got := r.Report(); got.Read != want.Read || got.Emitted != want.Emitted {
		t.Errorf("runner's report after Run: %v; want the partitions' totals, %v", got, want)
	}
	if !ok {
		t.Fatal("the checkpoints did not reach the reports of tasks given the partitions' messages")
	}
}
