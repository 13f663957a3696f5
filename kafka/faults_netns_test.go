package kafka_test

// Replication under network faults, in the style of Jepsen, with ZooKeeper, each broker and the
// clients on hosts of their own: network namespaces joined by a bridge that the test makes itself
// (kafka/internal/faultnet; its package doc draws them). The faults are a leader cut off by iptables
// inside its namespace, and a follower's link slowed with tc. Each test prints acknowledged / read back /
// lost / duplicated and its times. They need root, ip, tc and iptables, and skip with the reason
// otherwise; `make test` runs them short, `make test-faults` (FAULTS=long) longer.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/localsvc"
	"github.com/kafkarepro/kafkarepro/kafka/internal/faultnet"
	"github.com/kafkarepro/kafkarepro/kafka/internal/faults"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// hostsEnv carries the hosts' description (faultnet.Net.Encode) to the test's second run, inside the
// clients' namespace.
const hostsEnv = "KAFKA_FAULTNET_HOSTS"

// The hosts of a network fault test: ZooKeeper, brokers 0, 1 and 2, and the clients (the test itself).
// Their addresses are 10.202.0.<netAddrs[name]>.
var (
	netHosts = []string{"zk", "b0", "b1", "b2", "cli"}
	netAddrs = map[string]int{"zk": 10, "b0": 20, "b1": 21, "b2": 22, "cli": 30}
)

// The ports on the hosts: each host is a namespace of its own, so fixed ports never collide.
const (
	netZKPort     = 2181
	netBrokerPort = 9092
)

// onHosts runs body with its sockets on the clients' host. The test, run as usual, checks the machine
// (skipping without root, ip, tc or iptables), removes what a crashed earlier run left, makes the hosts
// and runs itself again inside the clients' namespace (ip netns exec), where body runs and starts
// ZooKeeper and the brokers on their hosts; its output is this test's log. When the child ends, however
// it ends, the parent stops whatever is left in the namespaces and removes them.
func onHosts(t *testing.T, body func(t *testing.T, n *faultnet.Net)) {
	if env := os.Getenv(hostsEnv); env != "" {
		n, err := faultnet.Decode(env)
		if err != nil {
			t.Fatal(err)
		}
		body(t, n)
		return
	}
	if testing.Short() {
		t.Skip("ZooKeeper and broker processes on hosts of their own (skipped with -short)")
	}
	if err := faultnet.Check(); err != nil {
		t.Skipf("network fault tests need root and ip, tc and iptables: %v", err)
	}
	n, err := faultnet.Create(context.Background(), "", netHosts, netAddrs, nil)
	if err != nil {
		t.Fatalf("make the hosts: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("remove the hosts: %v", err)
		}
	})
	cli, _ := n.Host("cli")
	var run []string
	for _, part := range strings.Split(t.Name(), "/") {
		run = append(run, "^"+part+"$")
	}
	args := append(cli.Exec(), os.Args[0], "-test.run", strings.Join(run, "/"), "-test.v", "-test.count=1")
	if d, ok := t.Deadline(); ok {
		// The child times out first, so that the parent is still there to remove the hosts.
		args = append(args, "-test.timeout", max(time.Until(d)-30*time.Second, 30*time.Second).Round(time.Second).String())
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), hostsEnv+"="+n.Encode())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		t.Log(sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the test on host %s (%s) failed: %v", cli.Name, cli.Netns, err)
	}
}

// startOnHosts starts ZooKeeper on host zk with scripts/zookeeper.sh (LISTEN_ADDR its address) and
// brokers 0..2 on hosts b0..b2, with props over faults.Defaults.
func startOnHosts(t *testing.T, n *faultnet.Net, props map[string]string) *faults.Cluster {
	t.Helper()
	zh := mustHost(t, n, "zk")
	scripts, err := localsvc.ScriptsDir()
	if err != nil {
		t.Fatal(err)
	}
	zs, err := localsvc.StartOn(context.Background(), localsvc.Host{Addr: zh.Addr, Exec: zh.Exec()}, scripts, "zookeeper", t.TempDir(), netZKPort)
	if err != nil {
		t.Fatalf("ZooKeeper on host %s: %v", zh.Name, err)
	}
	t.Cleanup(func() {
		if err := zs.Stop(); err != nil {
			t.Errorf("stop ZooKeeper: %v", err)
		}
	})
	return faults.Start(t, faults.Options{Brokers: 3, Props: props, ZKConnect: zh.Addr + ":" + strconv.Itoa(netZKPort),
		Host: func(id int) localsvc.Host {
			h := mustHost(t, n, "b"+strconv.Itoa(id))
			return localsvc.Host{Addr: h.Addr, Exec: h.Exec(), FreePort: func() (int, error) { return netBrokerPort, nil }}
		}})
}

func mustHost(t *testing.T, n *faultnet.Net, name string) faultnet.Host {
	t.Helper()
	h, err := n.Host(name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// brokerRegistered reports whether broker id has its ephemeral /brokers/ids/<id> (a live session).
func brokerRegistered(t *testing.T, c *faults.Cluster, id int) bool {
	t.Helper()
	ok, err := c.ZooKeeper().Exists(zk.BrokerIDPath(id))
	if err != nil {
		t.Fatalf("ZooKeeper: %v", err)
	}
	return ok
}

// §6, both models at once: the leader of two partitions cut off from ZooKeeper and from the other
// brokers (iptables in its namespace, both ways) while a producer keeps writing to it. The clients still
// reach it, so its producers go on sending there. Partition "cut-all" is written with acks=-1 and
// min.insync.replicas=2: the cut-off leader cannot get its followers' copies, nor shrink the ISR in
// ZooKeeper, so it acknowledges nothing more; the controller moves leadership once its ZooKeeper session
// expires, the producer finds the new leader, and after the heal nothing it had acknowledged is lost.
// Partition "cut-one" is written with acks=1: the old leader acknowledges what only it has, and after the
// heal it truncates by leader epoch (docs/PROTOCOL.md §10) and rejoins as a follower: those messages are
// lost, the asynchronous model's price, which the test counts and reports (it does not bound it).
// `make test` cuts once for 8 s; `make test-faults` cuts the leader of the moment three times, 25 s each.
func TestIntegration_FaultLeaderCutOff(t *testing.T) {
	onHosts(t, func(t *testing.T, n *faultnet.Net) {
		ctx := context.Background()
		c := startOnHosts(t, n, map[string]string{"min.insync.replicas": "2"})
		const all, one = "cut-all", "cut-one"
		c.CreateTopic(all, replication.Assignment{{0, 1, 2}})
		c.CreateTopic(one, replication.Assignment{{0, 1, 2}})
		for _, topic := range []string{all, one} {
			if l := c.Leader(topic, 0); l.ID != 0 {
				t.Fatalf("%s-0 is led by broker %d, want 0 (the first replica)", topic, l.ID)
			}
		}
		w := faults.Workload{Partitions: 1, SetSize: 10, MessageSize: 100, Pause: 5 * time.Millisecond, MaxSets: 200_000}
		wAll, wOne := w, w
		wAll.Topic, wAll.Acks = all, protocol.AcksAll
		wOne.Topic, wOne.Acks = one, 1
		runAll, runOne := wAll.Start(t, c), wOne.Start(t, c)
		tail := faults.StartTail(t, c, all)
		for _, r := range []*faults.Run{runAll, runOne} {
			if _, ok := r.AckedAfter(0, time.Now(), 30*time.Second); !ok {
				t.Fatal("the producers were not acknowledged before the cut")
			}
		}
		time.Sleep(time.Second)
		ctrl, _ := c.ZooKeeper().Get(zk.ControllerPath)
		t.Logf("faults: controller before the cut: %s", ctrl)

		cutFor := time.Duration(faultScale(8, 25)) * time.Second
		var windows []cutWindow
		var fos []faults.Failover
		var cutHost *faultnet.Host // while a cut is in place
		t.Cleanup(func() {
			if cutHost != nil {
				_ = n.Heal(ctx, *cutHost)
			}
		})
		for round := 1; round <= faultScale(1, 3); round++ {
			victim := c.Leader(all, 0)
			if lo := c.State(one, 0).Leader; lo != int32(victim.ID) {
				t.Logf("faults: round %d: %s-0 is led by broker %d, %s-0 by broker %d: the acks=1 producer's leader is not cut", round, all, victim.ID, one, lo)
			}
			vh := mustHost(t, n, "b"+strconv.Itoa(victim.ID))
			others := []faultnet.Host{mustHost(t, n, "zk")}
			for _, b := range c.Brokers {
				if b != victim {
					others = append(others, mustHost(t, n, "b"+strconv.Itoa(b.ID)))
				}
			}
			truncsBefore := map[string]int{}
			for _, topic := range []string{all, one} {
				truncsBefore[topic] = len(grepLines(victim.Output(), "truncated by leader epoch", "partition="+topic+"-0 "))
			}
			sentBefore, ackedBefore := runOne.Counts()
			if err := n.Cut(ctx, vh, others...); err != nil {
				t.Fatal(err)
			}
			cut := time.Now() // the rules are in (one transaction)
			cutHost = &vh
			rules, _ := n.Rules(ctx, vh)
			t.Logf("faults: round %d: broker %d (%s), leader of %s-0, cut off from ZooKeeper and the other brokers: %s", round, victim.ID, vh.Addr, all,
				strings.ReplaceAll(rules, "\n", "; "))

			elected, s := c.WaitLeaderMoved(all, 0, int32(victim.ID), time.Minute)
			fo := faults.Failover{What: fmt.Sprintf("round %d: broker %d cut off, leader of %s (acks=-1)", round, victim.ID, all), Elected: elected.Sub(cut)}
			if ack, ok := runAll.AckedAfter(0, elected, time.Minute); ok {
				fo.ProducerAgain = ack.Sub(cut)
			} else {
				t.Errorf("%s: the acks=-1 producer was not acknowledged again within a minute of the new leader", fo.What)
			}
			if got, ok := tail.ReceivedAfter(runAll, cut, time.Minute); ok {
				fo.ConsumerAgain = got.Sub(cut)
			} else {
				t.Errorf("%s: the consumer received nothing new within a minute", fo.What)
			}
			fos = append(fos, fo)
			t.Logf("faults: %s; new leader %d, epoch %d, ISR %v", fo, s.Leader, s.LeaderEpoch, s.ISR)
			if so := c.State(one, 0); so.Leader == int32(victim.ID) {
				c.WaitLeaderMoved(one, 0, int32(victim.ID), time.Minute)
			}
			if d := time.Until(cut.Add(cutFor)); d > 0 {
				time.Sleep(d)
			}
			sentCut, ackedCut := runOne.Counts()
			t.Logf("faults: round %d: during the %v cut the acks=1 producer sent %d sets and had %d acknowledged",
				round, cutFor, sentCut-sentBefore, ackedCut-ackedBefore)

			heal := time.Now()
			if err := n.Heal(ctx, vh); err != nil {
				t.Fatal(err)
			}
			cutHost = nil
			windows = append(windows, cutWindow{cut, heal})
			back := map[string]time.Duration{}
			for _, topic := range []string{all, one} {
				back[topic] = c.WaitInISR(topic, 0, victim.ID, time.Minute).Sub(heal)
			}
			t.Logf("faults: round %d: healed after %v; broker %d back in the ISR of %s after %v and of %s after %v", round,
				heal.Sub(cut).Round(time.Millisecond), victim.ID, all, back[all].Round(time.Millisecond), one, back[one].Round(time.Millisecond))
			for _, topic := range []string{all, one} {
				if s := c.State(topic, 0); s.Leader == int32(victim.ID) {
					t.Errorf("%s-0: broker %d leads again after the heal (%+v); it should have come back as a follower", topic, victim.ID, s)
				}
				lines := grepLines(victim.Output(), "truncated by leader epoch", "partition="+topic+"-0 ")
				if topic == one && len(lines) <= truncsBefore[topic] {
					t.Errorf("round %d: broker %d did not truncate %s-0 by leader epoch after the heal", round, victim.ID, topic)
				}
				lines = lines[min(truncsBefore[topic], len(lines)):]
				t.Logf("faults: round %d: broker %d, %s-0: %s", round, victim.ID, topic, strings.Join(lines, "; "))
			}
			time.Sleep(time.Second)
		}
		runAll.Stop()
		runOne.Stop()
		t.Logf("faults: %s", faults.Summary(fos))

		logsAll := faults.ReadBack(t, c, all, 1, 2*time.Second)
		time.Sleep(time.Second) // the consumer's last fetches
		tail.Stop()
		resAll := faults.Check(logsAll, tail, runAll)
		logsOne := faults.ReadBack(t, c, one, 1, time.Second)
		resOne := faults.Check(logsOne, nil, runOne)
		t.Logf("faults: acks=-1, min.insync.replicas=2: %s", resAll)
		t.Logf("faults: acks=1: %s", resOne)
		t.Logf("faults: acks=1 lost %d of %d acknowledged messages (%.1f%%): what the cut-off leader alone acknowledged; %s",
			resOne.Lost, resOne.Acked, 100*float64(resOne.Lost)/float64(max(resOne.Acked, 1)), lostWhen(logsOne, runOne, windows))
		if resAll.Acked == 0 || resAll.Lost > 0 || !resAll.OK() {
			t.Errorf("acks=-1 with min.insync.replicas=2 across the cut: %s", resAll)
		}
		if resOne.Acked == 0 || !resOne.OK() {
			t.Errorf("acks=1 across the cut: %s", resOne)
		}
		checkReplicasIdentical(t, c, all, 1)
		checkReplicasIdentical(t, c, one, 1)
	})
}

// A follower slowed with tc leaves the ISR after replica.lag.time.max.ms and comes back once the link is
// fast again (docs/PROTOCOL.md §10). Broker 0 leads two topics that broker 2 follows: "slow", written by an
// acks=-1 producer, and "slow-load", written by an acks=1 producer (the rest of the leader's traffic,
// which does not wait for the followers). What broker 0 sends to broker 2 is then limited to 256 kbit/s
// (32 KB/s) on the bridge's port toward broker 2; ZooKeeper's packets to it pass at full speed, so its
// session lives, and what takes it out of the ISR is the leader's lag check, not a dead session. (With
// the acks=-1 producer alone the follower would not fall behind: that producer waits for it and just goes
// at the slowed link's pace.) The acks=-1 producer waits until broker 2 is out of the ISR and then goes on
// without it (min.insync.replicas=2 still holds); once the qdisc is removed broker 2 catches up and
// rejoins; nothing acknowledged is lost and the replicas end identical.
func TestIntegration_FaultFollowerSlowed(t *testing.T) {
	onHosts(t, func(t *testing.T, n *faultnet.Net) {
		ctx := context.Background()
		const lag = 3 * time.Second
		// replica.lag.max.messages off: the time rule alone takes the follower out.
		c := startOnHosts(t, n, map[string]string{"min.insync.replicas": "2", "replica.lag.time.max.ms": strconv.Itoa(int(lag.Milliseconds())),
			"replica.lag.max.messages": "0"})
		const topic, load, rate = "slow", "slow-load", "256kbit"
		c.CreateTopic(topic, replication.Assignment{{0, 1, 2}})
		c.CreateTopic(load, replication.Assignment{{0, 1, 2}})
		w := faults.Workload{Partitions: 1, SetSize: 20, MessageSize: 1000, Pause: 20 * time.Millisecond, MaxSets: 20_000,
			Config: func(cfg *producer.Config) { cfg.RequestTimeout = 10 * time.Second }}
		wAll, wLoad := w, w
		wAll.Topic, wAll.Acks = topic, protocol.AcksAll
		wLoad.Topic, wLoad.Acks = load, 1
		run, runLoad := wAll.Start(t, c), wLoad.Start(t, c)
		for _, r := range []*faults.Run{run, runLoad} {
			if _, ok := r.AckedAfter(0, time.Now(), 30*time.Second); !ok {
				t.Fatal("the producers were not acknowledged before the fault")
			}
		}
		s0, size0 := time.Now(), c.Brokers[0].LogSize(topic, 0)+c.Brokers[0].LogSize(load, 0)
		time.Sleep(2 * time.Second)
		t.Logf("faults: before the fault the two producers write %.0f KB/s to broker 0 (sets of 20 messages of 1000 bytes, 20 ms apart)",
			float64(c.Brokers[0].LogSize(topic, 0)+c.Brokers[0].LogSize(load, 0)-size0)/time.Since(s0).Seconds()/1000)
		b0, b2 := mustHost(t, n, "b0"), mustHost(t, n, "b2")

		slowed := time.Now()
		if err := n.Slow(ctx, b2, b0, rate); err != nil {
			t.Fatal(err)
		}
		unslowed := false
		t.Cleanup(func() {
			if !unslowed {
				_ = n.Unslow(ctx, b2)
			}
		})
		left := waitState(t, c, topic, 0, lag+15*time.Second, "broker 2 out of the ISR", func(s replication.State) bool { return !slices.Contains(s.ISR, 2) })
		s := c.State(topic, 0)
		t.Logf("faults: broker 0 → broker 2 slowed to %s; broker 2 left the ISR of %s after %v (replica.lag.time.max.ms=%d), ISR %v, leader %d",
			rate, topic, left.Sub(slowed).Round(time.Millisecond), lag.Milliseconds(), s.ISR, s.Leader)
		if !brokerRegistered(t, c, 2) {
			t.Errorf("broker 2's ZooKeeper registration is gone: it left the ISR by a dead session, not by the lag check")
		}
		// The follower last caught up at its last fetch before the slow-down, a few ms before it (up to a
		// second on a loaded machine).
		if d := left.Sub(slowed); d < lag-time.Second {
			t.Errorf("broker 2 left the ISR %v after the slow-down, before replica.lag.time.max.ms=%v", d, lag)
		}
		again, ok := run.AckedAfter(0, left, 15*time.Second)
		if !ok {
			t.Fatalf("the acks=-1 producer was not acknowledged within 15 s of broker 2 leaving the ISR")
		}
		t.Logf("faults: the acks=-1 producer acknowledged again %v after broker 2 left the ISR; its longest wait so far %v",
			again.Sub(left).Round(time.Millisecond), longestAck(run))
		time.Sleep(time.Duration(faultScale(3, 15)) * time.Second)
		if s := c.State(topic, 0); slices.Contains(s.ISR, 2) {
			t.Errorf("broker 2 is back in the ISR while still slowed (%+v)", s)
		}
		behind := c.Brokers[0].LogSize(topic, 0) + c.Brokers[0].LogSize(load, 0) - c.Brokers[2].LogSize(topic, 0) - c.Brokers[2].LogSize(load, 0)
		t.Logf("faults: after %v slowed broker 2 is %d bytes behind the leader; the bridge's port toward it: %s",
			time.Since(slowed).Round(time.Millisecond), behind, strings.Join(strings.Fields(n.Qdisc(ctx, b2)), " "))

		fast := time.Now()
		if err := n.Unslow(ctx, b2); err != nil {
			t.Fatal(err)
		}
		unslowed = true
		rejoined := c.WaitInISR(topic, 0, 2, time.Minute)
		rejoinedLoad := c.WaitInISR(load, 0, 2, time.Minute)
		t.Logf("faults: qdisc removed; broker 2 back in the ISR of %s after %v and of %s after %v", topic,
			rejoined.Sub(fast).Round(time.Millisecond), load, rejoinedLoad.Sub(fast).Round(time.Millisecond))
		time.Sleep(time.Second)
		run.Stop()
		runLoad.Stop()
		res := faults.Check(faults.ReadBack(t, c, topic, 1, 2*time.Second), nil, run)
		resLoad := faults.Check(faults.ReadBack(t, c, load, 1, time.Second), nil, runLoad)
		t.Logf("faults: acks=-1 with a slowed follower: %s", res)
		t.Logf("faults: acks=1 (the load) with a slowed follower: %s", resLoad)
		t.Logf("faults: the acks=-1 producer's longest wait for an acknowledgement: %v", longestAck(run))
		if res.Acked == 0 || res.Lost > 0 || !res.OK() {
			t.Errorf("acks=-1 with a slowed follower: %s", res)
		}
		if resLoad.Acked == 0 || resLoad.Lost > 0 || !resLoad.OK() { // no leader changed: acks=1 loses nothing either
			t.Errorf("acks=1 with a slowed follower: %s", resLoad)
		}
		if lines := grepLines(c.Brokers[0].Output(), "fell behind", "partition="+topic+"-0 "); len(lines) == 0 {
			t.Errorf("broker 0's log has no ISR shrink of %s-0 for a follower that fell behind", topic)
		} else {
			t.Logf("faults: broker 0: %s", lines[0])
		}
		checkReplicasIdentical(t, c, topic, 1)
		checkReplicasIdentical(t, c, load, 1)
	})
}

// cutWindow is one cut: when its rules went in and when they were removed.
type cutWindow struct{ cut, heal time.Time }

// lostWhen sorts the acknowledged sets that are not in the log read back by when their acknowledgement
// came: before the first cut, during a cut, or after a heal (before the next cut).
func lostWhen(logs []faults.Log, r *faults.Run, windows []cutWindow) string {
	present := map[faults.ID]bool{}
	for _, l := range logs {
		for _, id := range l.IDs {
			present[id] = true
		}
	}
	var before, during, after int
	for p, ss := range r.Sets() {
		for _, s := range ss {
			if !s.Acked || present[faults.ID{Partition: int32(p), Set: s.Seq, Msg: 0}] {
				continue
			}
			switch {
			case len(windows) == 0 || s.Done.Before(windows[0].cut):
				before += s.Messages
			case slices.ContainsFunc(windows, func(w cutWindow) bool { return !s.Done.Before(w.cut) && s.Done.Before(w.heal) }):
				during += s.Messages
			default:
				after += s.Messages
			}
		}
	}
	return fmt.Sprintf("acknowledged before the first cut and lost %d, during a cut %d, after a heal (before the healed broker learned it was deposed) %d", before, during, after)
}

// grepLines returns the lines of out that contain every one of subs, each cut to its message and
// attributes (the time stamp dropped).
func grepLines(out string, subs ...string) []string {
	var found []string
next:
	for _, line := range strings.Split(out, "\n") {
		for _, s := range subs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		if i := strings.Index(line, "msg="); i >= 0 {
			line = line[i:]
		}
		found = append(found, line)
	}
	return found
}

// waitState waits until the partition's state satisfies ok and returns when.
func waitState(t *testing.T, c *faults.Cluster, topic string, p int, timeout time.Duration, what string, ok func(replication.State) bool) time.Time {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		if s := c.State(topic, p); s.Leader >= 0 && ok(s) {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s-%d: no %s within %v (state %+v)", topic, p, what, timeout, c.State(topic, p))
		}
	}
}

// longestAck is the longest time a Send took that ended acknowledged.
func longestAck(r *faults.Run) time.Duration {
	var d time.Duration
	for _, ss := range r.Sets() {
		for _, s := range ss {
			if s.Acked {
				d = max(d, s.Done.Sub(s.Sent))
			}
		}
	}
	return d.Round(time.Millisecond)
}
