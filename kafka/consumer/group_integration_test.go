package consumer

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/kafkarepro/kafkarepro/kafka/zk"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// TestIntegration_GroupProcesses: two brokers with four partitions of "t" each, three group members in separate
// processes. Every partition is owned by exactly one stream as Algorithm 1 says, the ZooKeeper tree holds
// exactly the paths of docs/PROTOCOL.md §5, and after a kill -9 of one member while messages flow the others take its
// partitions and every message reaches the group, duplicates coming only from after the dead member's last
// commit (§3.3). It also measures the figures of the report: kill -9 → partitions taken over, and a clean exit
// → partitions taken over.
func TestIntegration_GroupProcesses(t *testing.T) {
	zkc := zktest.Start(t)
	b0, b1 := startBroker(t, zkc, 0), startBroker(t, zkc, 1)
	p := newProducer(t, b0, b1)
	sent := produceAll(t, p, "t", "seed", 80, b0, b1)
	c := rawZK(t, zkc)
	waitFor(t, 10*time.Second, "topic registered on both brokers", func() bool {
		k, _, _ := c.Children(zk.BrokerTopicPath("t"))
		return len(k) == 2
	})

	const group = "g1"
	procs := []*proc{startProc(t, zkc, group, "t:1"), startProc(t, zkc, group, "t:1"), startProc(t, zkc, group, "t:1")}
	waitFor(t, 20*time.Second, "the group to balance", func() bool { return balanced(c, group, "t", 8) })
	waitFor(t, 10*time.Second, "offsets of all 8 partitions committed", func() bool {
		k, _, _ := c.Children(zk.OffsetsPath(group, "t"))
		return len(k) == 8
	})

	// The tree holds exactly docs/PROTOCOL.md §5's paths, with the right kinds and data.
	nodes := map[string]string{}
	tree(c, "/", nodes)
	ids := map[string]bool{}
	for _, pr := range procs {
		ids[pr.id] = true
	}
	patterns := []struct{ re, kind string }{
		{`^/brokers$|^/brokers/ids$|^/brokers/topics$|^/brokers/topics/t$|^/consumers$|^/consumers/g1$`, "P"},
		{`^/consumers/g1/(ids|owners|offsets)$|^/consumers/g1/(owners|offsets)/t$`, "P"},
		{`^/brokers/ids/[01] E [^:]+-\d+:127\.0\.0\.1:\d+$`, "E"},
		{`^/brokers/topics/t/[01] E 4$`, "E"},
		{`^/consumers/g1/ids/g1_[^/]+-\d+-[0-9a-f]{8} E \{"t":1\}$`, "E"},
		{`^/consumers/g1/owners/t/[01]-[0-3] E g1_[^/]+-0$`, "E"},
		{`^/consumers/g1/offsets/t/[01]-[0-3] P \d+$`, "P"},
	}
	for path, v := range nodes {
		ok := false
		for _, pt := range patterns {
			if regexp.MustCompile(pt.re).MatchString(path) || regexp.MustCompile(pt.re).MatchString(path+" "+v) {
				ok = strings.HasPrefix(v, pt.kind)
				break
			}
		}
		if !ok {
			t.Errorf("unexpected node %s = %q", path, v)
		}
		if rest, isID := strings.CutPrefix(path, "/consumers/g1/ids/"); isID && !ids[rest] {
			t.Errorf("registered consumer %s is none of the three processes", rest)
		}
	}
	if len(nodes) != 6+5+2+2+3+8+8 {
		t.Errorf("tree has %d nodes, want %d:\n%v", len(nodes), 34, nodes)
	}

	// Messages flow while one member is killed with SIGKILL.
	var seq atomic.Int64
	stop := make(chan struct{})
	flowDone := make(chan []string)
	go func() {
		var flow []string
		for i := 0; ; i++ {
			select {
			case <-stop:
				flowDone <- flow
				return
			default:
			}
			b := []*testBroker{b0, b1}[i%2]
			msg := fmt.Sprintf("flow-%d", i)
			if err := p.SendTo(b.id, "t", int32(i/2%4), []byte(msg)); err != nil {
				t.Error(err)
			}
			flow = append(flow, msg)
			seq.Add(1)
			time.Sleep(500 * time.Microsecond)
		}
	}()
	time.Sleep(700 * time.Millisecond)
	victim := procs[1]
	own := owners(c, group, "t")
	var victimParts []string
	for part, s := range own {
		if strings.HasPrefix(s, victim.id+"-") {
			victimParts = append(victimParts, part)
		}
	}
	sort.Strings(victimParts)
	killed := time.Now()
	victim.kill()
	killTook := time.Since(killed)
	// Nobody else owns its partitions until its session expires: the registry holds its last commits.
	lastCommit := map[string]int64{}
	for _, part := range victimParts {
		off, err := readOffsetRaw(c, group, "t", part)
		if err != nil {
			t.Fatal(err)
		}
		lastCommit[part] = off
	}
	takeover := waitFor(t, 15*time.Second, "survivors to take the killed member's partitions", func() bool {
		return balanced(c, group, "t", 8) && !anyOwnedBy(c, group, "t", victim.id)
	})
	t.Logf("FIGURE kill -9 → partitions owned again: %v (zk.sessiontimeout.ms=2000); victim owned %v",
		killTook+takeover, victimParts)
	time.Sleep(300 * time.Millisecond)

	// A clean exit of a second member.
	leaver := procs[2]
	leaverParts := 0
	for _, s := range owners(c, group, "t") {
		if strings.HasPrefix(s, leaver.id+"-") {
			leaverParts++
		}
	}
	exitStart := time.Now()
	leaver.term()
	exited := time.Since(exitStart)
	cleanTake := waitFor(t, 10*time.Second, "the last member to take everything", func() bool {
		return balanced(c, group, "t", 8) && !anyOwnedBy(c, group, "t", leaver.id)
	})
	t.Logf("FIGURE clean exit (SIGTERM): process gone after %v, its %d partitions owned again %v later",
		exited, leaverParts, cleanTake)

	close(stop)
	flow := <-flowDone
	all := append(append([]string{}, sent...), flow...)
	got := map[string]int{}
	byKey := map[string]int{}
	var dups []delivery
	collect := func() {
		clear(got)
		clear(byKey)
		dups = dups[:0]
		for _, pr := range procs {
			for _, d := range readOut(t, pr.out) {
				got[d.payload]++
				k := d.part + "@" + fmt.Sprint(d.off) + "@" + d.payload
				if byKey[k]++; byKey[k] == 2 {
					dups = append(dups, d)
				}
			}
		}
	}
	waitFor(t, 20*time.Second, "every message delivered to the group", func() bool {
		collect()
		return len(missing(all, got)) == 0
	})
	// §3.3: within a partition messages come out in log order. A member that gives a partition up commits
	// first and whoever takes it (itself included) resumes there, so each member's output per partition is
	// strictly increasing.
	for i, pr := range procs {
		last := map[string]int64{}
		for _, d := range readOut(t, pr.out) {
			if prev, seen := last[d.part]; seen && d.off <= prev {
				t.Errorf("member %d printed %s@%d after offset %d", i, d.part, d.off, prev)
			}
			last[d.part] = d.off
		}
	}
	for _, d := range dups {
		lc, ok := lastCommit[d.part]
		if !ok || d.off < lc {
			t.Errorf("duplicate %s at %s@%d not after the killed member's last commit (%v)", d.payload, d.part, d.off, lastCommit)
		}
	}
	t.Logf("%d messages, %d delivered twice (all in %v after offsets %v)", len(all), len(dups), victimParts, lastCommit)
}

func anyOwnedBy(c *gozk.Conn, group, topic, id string) bool {
	for _, s := range owners(c, group, topic) {
		if strings.HasPrefix(s, id+"-") {
			return true
		}
	}
	return false
}

func readOffsetRaw(c *gozk.Conn, group, topic, part string) (int64, error) {
	d, _, err := c.Get(zk.OffsetPath(group, topic, part))
	if err != nil {
		return 0, fmt.Errorf("offset of %s: %w", part, err)
	}
	return strconv.ParseInt(string(d), 10, 64)
}

// fastConfig is a group member with the short timeouts of these tests.
func fastConfig(zkc, group string) GroupConfig {
	cfg := DefaultGroupConfig()
	cfg.GroupID, cfg.ZkConnect = group, zkc
	cfg.ZkSessionTimeout, cfg.ZkSyncTime = 2*time.Second, 200*time.Millisecond
	cfg.AutoCommitInterval, cfg.FetcherBackoff, cfg.RebalanceRetriesMax = 100*time.Millisecond, 20*time.Millisecond, 30
	return cfg
}

// member is an in-process group member draining its streams into a shared count.
type member struct {
	g   *GroupConsumer
	got chan string
}

func startMember(t *testing.T, cfg GroupConfig, topic string, n int) *member {
	t.Helper()
	g, err := NewGroupConsumer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := g.CreateMessageStreams(map[string]int{topic: n})
	if err != nil {
		t.Fatal(err)
	}
	m := &member{g: g, got: make(chan string, 1<<16)}
	for _, s := range ss[topic] {
		go func() {
			for s.Next() {
				m.got <- string(s.Message().Payload)
			}
		}()
	}
	t.Cleanup(func() { g.Close() })
	return m
}

// drain counts what members deliver until every message of want has been seen.
func drain(t *testing.T, timeout time.Duration, want []string, ms ...*member) map[string]int {
	t.Helper()
	got := map[string]int{}
	deadline := time.After(timeout)
	for len(missing(want, got)) > 0 {
		select {
		case <-deadline:
			miss := missing(want, got)
			t.Fatalf("%d of %d messages never delivered, e.g. %v", len(miss), len(want), miss[:min(5, len(miss))])
		default:
		}
		progressed := false
		for _, m := range ms {
			select {
			case p := <-m.got:
				got[p]++
				progressed = true
			default:
			}
		}
		if !progressed {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return got
}

// TestIntegration_GroupsBrokersOffsets: two groups each receive the whole stream independently; a broker added
// while consuming is rebalanced in and read; a broker that dies leaves the registry and the group goes on; a
// group whose offsets nodes are deleted re-reads the topic from the start.
func TestIntegration_GroupsBrokersOffsets(t *testing.T) {
	zkc := zktest.Start(t)
	b0 := startBroker(t, zkc, 0)
	p := newProducer(t, b0)
	first := produceAll(t, p, "t", "a", 200, b0)
	c := rawZK(t, zkc)

	ga := []*member{startMember(t, fastConfig(zkc, "ga"), "t", 1), startMember(t, fastConfig(zkc, "ga"), "t", 2)}
	gb := startMember(t, fastConfig(zkc, "gb"), "t", 1)
	drain(t, 15*time.Second, first, ga...)
	drain(t, 15*time.Second, first, gb)

	// A broker joins: its partitions are rebalanced in.
	b1 := startBroker(t, zkc, 1)
	p1 := newProducer(t, b0, b1)
	second := produceAll(t, p1, "t", "b", 200, b0, b1)
	waitFor(t, 15*time.Second, "group ga to own the new broker's partitions", func() bool { return balanced(c, "ga", "t", 8) })
	drain(t, 15*time.Second, second, ga...)
	drain(t, 15*time.Second, second, gb)

	// A broker dies: it leaves the registry, the group keeps reading the other.
	if err := b1.Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "broker 1 to leave the registry", func() bool {
		ok, _, _ := c.Exists(zk.BrokerIDPath(1))
		return !ok
	})
	waitFor(t, 15*time.Second, "group ga to rebalance to broker 0 alone", func() bool { return balanced(c, "ga", "t", 4) })
	third := produceAll(t, p, "t", "c", 100, b0)
	drain(t, 15*time.Second, third, ga...)
	drain(t, 15*time.Second, third, gb)

	// Group gb's offsets are deleted while it is stopped: it reads broker 0's partitions again from the start.
	gb.g.Close()
	kids, _, _ := c.Children(zk.OffsetsPath("gb", "t"))
	for _, k := range kids {
		if err := c.Delete(zk.OffsetPath("gb", "t", k), -1); err != nil {
			t.Fatal(err)
		}
	}
	var again []string
	for _, m := range append(first, third...) {
		again = append(again, m)
	}
	gb2 := startMember(t, fastConfig(zkc, "gb"), "t", 1)
	drain(t, 15*time.Second, again, gb2)
}

// TestIntegration_ZooKeeperOutage: ZooKeeper stops for a few seconds and comes back with the same data
// directory: no committed offset is lost and the consumer goes on.
func TestIntegration_ZooKeeperOutage(t *testing.T) {
	srv := zktest.StartServer(t)
	zkc := srv.Connect()
	b0 := startBroker(t, zkc, 0)
	p := newProducer(t, b0)
	before := produceAll(t, p, "t", "x", 100, b0)
	m := startMember(t, fastConfig(zkc, "g"), "t", 1)
	drain(t, 15*time.Second, before, m)
	if err := m.g.CommitOffsets(); err != nil {
		t.Fatal(err)
	}
	c := rawZK(t, zkc)
	committed := map[string]int64{}
	for i := range 4 {
		part := zk.PartitionName(0, i)
		off, err := readOffsetRaw(c, "g", "t", part)
		if err != nil {
			t.Fatal(err)
		}
		committed[part] = off
	}

	srv.Stop()
	during := produceAll(t, p, "t", "y", 100, b0) // the broker keeps serving; fetching goes on
	drain(t, 15*time.Second, during, m)
	time.Sleep(3 * time.Second)
	srv.Restart()
	zktest.WaitServing(t, zkc, 30*time.Second)

	after := produceAll(t, p, "t", "z", 100, b0)
	drain(t, 20*time.Second, after, m)
	if err := m.g.CommitOffsets(); err != nil {
		t.Fatalf("commit after the outage: %v", err)
	}
	// The tree is read through a new client: the one opened before the outage may still be between its
	// reconnection attempts, and its "could not connect" says nothing of what the server holds.
	c = rawZK(t, zkc)
	for part, old := range committed {
		off, err := readOffsetRaw(c, "g", "t", part)
		if err != nil || off < old {
			t.Fatalf("offset of %s went from %d to %d (%v)", part, old, off, err)
		}
	}
	if !balanced(c, "g", "t", 4) {
		t.Fatalf("owners after the outage: %v", owners(c, "g", "t"))
	}
}
