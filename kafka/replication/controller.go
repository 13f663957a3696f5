package replication

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// reconcileEvery is how often the controller looks at every partition even without a ZooKeeper event: it
// picks up the leaders' own ISR changes (which it does not watch) and retries what failed.
const reconcileEvery = 3 * time.Second

// electionLoop is every broker's candidacy: whoever creates the ephemeral /controller is the controller
// until its session ends; the others wait for the node to go and try again (docs/PROTOCOL.md §10). A
// cluster needs no controller before its first replicated topic, so the candidacy starts then: a cluster of
// 0.7 topics only keeps exactly 0.7's ZooKeeper tree.
func (m *Manager) electionLoop() {
	defer m.wg.Done()
	sessions, cancel := m.zk.NewSessions()
	defer cancel()
	if !m.waitForReplicatedTopic() {
		return
	}
	for {
		select {
		case <-m.stop:
			return
		default:
		}
		err := m.zk.CreateEphemeral(zk.ControllerPath, marshalController(m.cfg.BrokerID, time.Now()))
		if err == nil {
			c := &controller{m: m, lg: m.lg.With("role", "controller"), sent: map[int32]map[TopicPartition]sentState{},
				epochs: map[int32]int64{}, senders: map[int32]*sender{}}
			c.run(sessions)
			continue
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			m.lg.Warn("replication: controller election failed; retrying", "err", err)
			if !m.sleep(time.Second) {
				return
			}
			continue
		}
		exists, w, err := m.zk.ExistsW(zk.ControllerPath)
		if err != nil {
			if !m.sleep(time.Second) {
				return
			}
			continue
		}
		if !exists {
			continue
		}
		select {
		case <-m.stop:
			return
		case <-w:
		case <-sessions:
		}
	}
}

// waitForReplicatedTopic returns once some topic is replicated (true), or when the manager stops (false).
func (m *Manager) waitForReplicatedTopic() bool {
	for {
		var w <-chan gozk.Event
		ok, ew, err := m.zk.ExistsW(zk.BrokerTopicsPath)
		if err == nil && ok {
			var names []string
			names, w, err = m.zk.ChildrenW(zk.BrokerTopicsPath)
			for _, n := range names {
				if _, aerr := ReadAssignment(m.zk, n); aerr == nil {
					return true
				}
			}
		} else {
			w = ew
		}
		if err != nil {
			if !m.sleep(time.Second) {
				return false
			}
			continue
		}
		select {
		case <-m.stop:
			return false
		case <-w:
		}
	}
}

func (m *Manager) sleep(d time.Duration) bool {
	select {
	case <-m.stop:
		return false
	case <-time.After(d):
		return true
	}
}

// controller is the active controller's state, alive while this broker holds /controller.
type controller struct {
	m            *Manager
	lg           *slog.Logger
	epoch        int32
	epochVersion int32 // /controller_epoch's version after this controller's increment: the fence of its writes

	lastImbalanceCheck time.Time // auto.leader.rebalance.enable: the last pass that moved leaders back

	sent    map[int32]map[TopicPartition]sentState // per live broker: what it was last sent
	epochs  map[int32]int64                        // per live broker: its broker epoch (a new registration changes it)
	senders map[int32]*sender
}

type sentState struct{ leader, epoch, version int32 }

// run is the controller's life: a new epoch, then a reconciliation at every change of the broker registry,
// of the topic registry or of a preferred-replica-election request, and every reconcileEvery, until the
// session ends, /controller goes or the broker stops.
func (c *controller) run(sessions <-chan struct{}) {
	m := c.m
	defer func() {
		for _, s := range c.senders {
			s.close()
		}
	}()
	if err := c.bumpEpoch(); err != nil {
		c.lg.Warn("replication: cannot increment the controller epoch; resigning", "err", err)
		m.zk.Delete(zk.ControllerPath)
		return
	}
	c.lg.Info("replication: this broker is the controller", "epoch", c.epoch)
	m.mu.Lock()
	if c.epoch > m.ctrlEpoch {
		m.ctrlEpoch = c.epoch
	}
	m.mu.Unlock()
	var wIDs, wTopics, wAdmin, wCtrl <-chan gozk.Event
	tick := time.NewTicker(reconcileEvery)
	defer tick.Stop()
	var retry <-chan time.Time
	for {
		var err error
		if wCtrl == nil {
			var ok bool
			if ok, wCtrl, err = m.zk.ExistsW(zk.ControllerPath); err == nil && !ok {
				return
			}
		}
		if wIDs == nil && err == nil {
			_, wIDs, err = m.zk.ChildrenW(zk.BrokerIDsPath)
		}
		if wTopics == nil && err == nil {
			if err = m.zk.EnsurePath(zk.BrokerTopicsPath); err == nil {
				_, wTopics, err = m.zk.ChildrenW(zk.BrokerTopicsPath)
			}
		}
		if wAdmin == nil && err == nil {
			_, wAdmin, err = m.zk.ExistsW(zk.PreferredReplicaElectionPath)
		}
		if err == nil {
			err = c.reconcile()
		}
		if errors.Is(err, zk.ErrFenced) {
			c.lg.Warn("replication: a newer controller has been elected; resigning", "epoch", c.epoch, "err", err)
			if id, _ := ReadController(m.zk); id == m.cfg.BrokerID {
				m.zk.Delete(zk.ControllerPath) // still ours: let a fresh election (and epoch) happen
			}
			return
		}
		retry = nil
		if err != nil {
			c.lg.Warn("replication: controller pass incomplete; retrying", "err", err)
			retry = time.After(200 * time.Millisecond)
		}
		select {
		case <-m.stop:
			return
		case <-sessions:
			c.lg.Warn("replication: new ZooKeeper session; no longer the controller")
			return
		case ev := <-wCtrl:
			wCtrl = nil
			if ev.Type == gozk.EventNodeDeleted {
				c.lg.Warn("replication: /controller is gone; no longer the controller")
				return
			}
		case <-wIDs:
			wIDs = nil
		case <-wTopics:
			wTopics = nil
		case <-wAdmin:
			wAdmin = nil
		case <-tick.C:
		case <-retry:
		}
	}
}

// bumpEpoch adds one to /controller_epoch with a conditional update (creating it at 1).
func (c *controller) bumpEpoch() error {
	for range 10 {
		e, v, err := ReadControllerEpoch(c.m.zk)
		if err != nil {
			return err
		}
		next := []byte(strconv.Itoa(int(e) + 1))
		nv := int32(0)
		if v < 0 {
			err = c.m.zk.CreatePersistent(zk.ControllerEpochPath, next)
		} else {
			nv, err = c.m.zk.SetVersion(zk.ControllerEpochPath, next, v)
		}
		if err == nil {
			c.epoch, c.epochVersion = e+1, nv
			return nil
		}
		if !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return fmt.Errorf("replication: %s keeps changing", zk.ControllerEpochPath)
}

// reconcile is one pass of the partition state machine (the package doc's controller section) over every
// replicated partition, followed by LEADER_AND_ISR to every live replica whose view is out of date.
func (c *controller) reconcile() error {
	m := c.m
	live, err := LiveBrokers(m.zk)
	if err != nil {
		return err
	}
	topics, names, err := ReplicatedTopics(m.zk)
	if err != nil {
		return err
	}
	elect := map[TopicPartition]bool{}
	adminData, aerr := m.zk.Get(zk.PreferredReplicaElectionPath)
	if aerr == nil {
		ps, perr := ParseElection(adminData)
		if perr != nil {
			c.lg.Warn("replication: ignoring a bad preferred-replica-election request", "err", perr)
		}
		for _, tp := range ps {
			elect[tp] = true
		}
	} else if !errors.Is(aerr, zk.ErrNoNode) {
		return aerr
	}
	var failed error
	current := map[TopicPartition]protocol.PartitionState{}
	// auto.leader.rebalance.enable: every leader.imbalance.check.interval.seconds (at the granularity of
	// reconcileEvery), leadership goes back to the preferred replicas as with an election request.
	rebalance := m.cfg.AutoLeaderRebalance && time.Since(c.lastImbalanceCheck) >= m.cfg.LeaderImbalanceInterval
	if rebalance {
		c.lastImbalanceCheck = time.Now()
	}
	for _, t := range names {
		for p, replicas := range topics[t] {
			tp := TopicPartition{Topic: t, Partition: int32(p)}
			s, err := c.decide(tp, replicas, live, elect[tp] || rebalance)
			if err != nil {
				failed = err
				continue
			}
			current[tp] = protocol.PartitionState{Topic: t, Partition: int32(p), Leader: s.Leader, LeaderEpoch: s.LeaderEpoch,
				Version: s.ZKVersion, ISR: s.ISR, Replicas: replicas}
		}
	}
	if aerr == nil && failed == nil {
		if err := m.zk.Delete(zk.PreferredReplicaElectionPath); err != nil {
			failed = err
		} else {
			c.lg.Info("replication: preferred replica election done", "partitions", len(elect))
		}
	}
	c.send(live, current)
	return failed
}

// decide reads one partition's state, applies the rules (Decide, election.go), asks the brokers where their
// logs end when the rules need it, writes the new state where the rules changed it (a conditional set) and
// returns what it is now.
func (c *controller) decide(tp TopicPartition, replicas []int32, live map[int32]zk.Broker, preferred bool) (State, error) {
	m := c.m
	s, err := ReadState(m.zk, tp.Topic, int(tp.Partition))
	exists := err == nil
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return State{}, err
	}
	f := Facts{State: s, Exists: exists, Replicas: replicas, Live: map[int32]int64{}, Preferred: preferred,
		Unclean: m.cfg.UncleanLeaderElection, ControllerEpoch: c.epoch}
	for id, b := range live {
		f.Live[id] = b.Epoch
	}
	d := Decide(f)
	if d.Deposed {
		return s, fmt.Errorf("%w: %s was written by controller epoch %d, this controller's is %d", zk.ErrFenced, tp, s.ControllerEpoch, c.epoch)
	}
	if len(d.Ask) > 0 {
		f.LogEnds = c.askLogEnds(tp, d.Ask, s.LeaderEpoch, live)
		if d = Decide(f); len(d.Ask) > 0 {
			return s, fmt.Errorf("replication: %s: every ISR member registered again; waiting for brokers %v to say where their logs end", tp, d.Ask)
		}
	}
	if !d.Change {
		return s, nil
	}
	ns := d.State
	ns.ControllerEpoch = c.epoch
	if !exists {
		if err := m.zk.EnsurePath(zk.TopicPartitionsPath(tp.Topic) + "/" + strconv.Itoa(int(tp.Partition))); err != nil {
			return State{}, err
		}
	}
	written, err := c.writeState(tp, ns)
	if err != nil {
		return State{}, fmt.Errorf("replication: write state of %s: %w", tp, err)
	}
	if !exists {
		c.lg.Info("replication: new partition", "partition", tp.String(), "leader", ns.Leader, "isr", ns.ISR)
		return written, nil
	}
	c.lg.Info("replication: partition state changed", "partition", tp.String(), "why", d.Why, "leader", ns.Leader,
		"leaderEpoch", ns.LeaderEpoch, "isr", ns.ISR, "brokerEpochs", ns.BrokerEpochs,
		"was", fmt.Sprintf("leader %d epoch %d isr %v brokerEpochs %v", s.Leader, s.LeaderEpoch, s.ISR, s.BrokerEpochs))
	return written, nil
}

// askLogEnds asks each broker of ids where its replica of tp ends (EPOCH_END_OFFSET from the controller,
// replica id protocol.ControllerReplicaID, for the partition's current leader epoch). A broker that does not
// answer is left out: the rules then ask again at the next pass.
func (c *controller) askLogEnds(tp TopicPartition, ids []int32, epoch int32, live map[int32]zk.Broker) map[int32]LogEnd {
	out := map[int32]LogEnd{}
	timeout := min(c.m.cfg.ControllerSocketTimeout, 5*time.Second)
	for _, id := range ids {
		b, ok := live[id]
		if !ok {
			continue
		}
		e, err := askLogEnd(b.Addr(), tp, epoch, timeout)
		if err != nil {
			c.lg.Warn("replication: cannot learn where a replica's log ends", "partition", tp.String(), "broker", id, "err", err)
			continue
		}
		out[id] = e
	}
	c.lg.Info("replication: asked the ISR where their logs end", "partition", tp.String(), "ends", out)
	return out
}

// askLogEnd is one EPOCH_END_OFFSET round trip to addr for tp's replica there.
func askLogEnd(addr string, tp TopicPartition, epoch int32, timeout time.Duration) (LogEnd, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return LogEnd{}, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	req := protocol.EpochEndOffsetRequest{ReplicaID: protocol.ControllerReplicaID,
		Partitions: []protocol.EpochQuery{{Topic: tp.Topic, Partition: tp.Partition, Epoch: epoch}}}
	if _, err := conn.Write(req.AppendTo(nil)); err != nil {
		return LogEnd{}, err
	}
	code, payload, _, err := protocol.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return LogEnd{}, err
	}
	if code != protocol.ErrNone {
		return LogEnd{}, code
	}
	ends, err := protocol.DecodeEpochEndResponse(payload)
	if err != nil {
		return LogEnd{}, err
	}
	if len(ends) != 1 || ends[0].Topic != tp.Topic || ends[0].Partition != tp.Partition {
		return LogEnd{}, fmt.Errorf("replication: EPOCH_END_OFFSET answer for %s from %s: %v", tp, addr, ends)
	}
	if ends[0].Error != protocol.ErrNone {
		return LogEnd{}, ends[0].Error
	}
	return LogEnd{Epoch: ends[0].Epoch, End: ends[0].EndOffset}, nil
}

// writeState is WriteState fenced by the controller epoch: it happens only while /controller_epoch is at
// the version this controller's election left it, so a controller deposed without knowing it yet changes no
// partition state (0.8 had no such fence; Kafka added one later).
func (c *controller) writeState(tp TopicPartition, s State) (State, error) {
	v, err := c.m.zk.SetVersionFenced(zk.PartitionStatePath(tp.Topic, int(tp.Partition)), s.Marshal(), s.ZKVersion,
		s.ZKVersion < 0, zk.ControllerEpochPath, c.epochVersion)
	if err != nil {
		return s, err
	}
	s.ZKVersion = v
	return s, nil
}

// send queues, for every live broker, the partitions it replicates whose state it has not been sent yet.
func (c *controller) send(live map[int32]zk.Broker, current map[TopicPartition]protocol.PartitionState) {
	for id := range c.sent {
		if b, ok := live[id]; !ok || b.Epoch != c.epochs[id] {
			// Gone, or restarted (a new registration): when it is back it is told everything again.
			if s := c.senders[id]; s != nil {
				s.close()
				delete(c.senders, id)
			}
			delete(c.sent, id)
		}
	}
	for id, b := range live {
		c.epochs[id] = b.Epoch
	}
	var addrs []protocol.BrokerAddr
	for _, id := range slices.Sorted(maps.Keys(live)) {
		b := live[id]
		addrs = append(addrs, protocol.BrokerAddr{ID: id, Host: b.Host, Port: int32(b.Port)})
	}
	for _, id := range slices.Sorted(maps.Keys(live)) {
		var batch []protocol.PartitionState
		sent := c.sent[id]
		if sent == nil {
			sent = map[TopicPartition]sentState{}
			c.sent[id] = sent
		}
		for tp, st := range current {
			if !slices.Contains(st.Replicas, id) {
				continue
			}
			ss := sentState{st.Leader, st.LeaderEpoch, st.Version}
			if prev, ok := sent[tp]; ok && prev == ss {
				continue // (a map lookup with ok: leader 0, epoch 0, version 0 is also the zero value)
			}
			sent[tp] = ss
			batch = append(batch, st)
		}
		if len(batch) == 0 {
			continue
		}
		s := c.senders[id]
		b := live[id]
		if s == nil || s.addr != b.Addr() {
			if s != nil {
				s.close()
			}
			s = newSender(c, id, b.Addr())
			c.senders[id] = s
		}
		s.queue(protocol.LeaderAndISRRequest{ControllerID: c.m.cfg.BrokerID, ControllerEpoch: c.epoch, BrokerEpoch: b.Epoch,
			Brokers: addrs, Partitions: batch})
	}
}

// sender delivers LEADER_AND_ISR requests to one broker in order, retrying while the broker is alive.
type sender struct {
	c    *controller
	id   int32
	addr string

	mu      sync.Mutex
	pending []protocol.LeaderAndISRRequest
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func newSender(c *controller, id int32, addr string) *sender {
	s := &sender{c: c, id: id, addr: addr, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *sender) queue(r protocol.LeaderAndISRRequest) {
	s.mu.Lock()
	s.pending = append(s.pending, r)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *sender) close() {
	close(s.stop)
	<-s.done
}

func (s *sender) run() {
	defer close(s.done)
	var conn net.Conn
	var r *bufio.Reader
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	var buf, rbuf []byte
	failures := 0
	timeout := s.c.m.cfg.ControllerSocketTimeout
	for {
		s.mu.Lock()
		var req *protocol.LeaderAndISRRequest
		if len(s.pending) > 0 {
			req = &s.pending[0]
		}
		s.mu.Unlock()
		if req == nil {
			select {
			case <-s.stop:
				return
			case <-s.wake:
			}
			continue
		}
		err := func() error {
			if conn == nil {
				c, err := net.DialTimeout("tcp", s.addr, timeout)
				if err != nil {
					return err
				}
				conn, r = c, bufio.NewReader(c)
			}
			conn.SetDeadline(time.Now().Add(timeout))
			buf = req.AppendTo(buf[:0])
			if _, err := conn.Write(buf); err != nil {
				return err
			}
			code, payload, nb, err := protocol.ReadResponse(r, rbuf)
			rbuf = nb
			if err != nil {
				return err
			}
			if code != protocol.ErrNone {
				return code
			}
			parts, err := protocol.DecodePartitionErrors(payload)
			for _, p := range parts {
				if p.Error != protocol.ErrNone {
					s.c.lg.Warn("replication: broker refused a partition state", "broker", s.id, "partition",
						TopicPartition{p.Topic, p.Partition}.String(), "err", p.Error)
				}
			}
			return err
		}()
		if err == nil {
			s.mu.Lock()
			s.pending = s.pending[1:]
			s.mu.Unlock()
			failures = 0
			continue
		}
		if errors.Is(err, protocol.ErrStaleControllerEpoch) || errors.Is(err, protocol.ErrStaleBrokerEpoch) {
			// A newer controller, or a broker registered again since this request was made for it (the
			// registry's watch brings the controller back with what the new registration needs).
			s.c.lg.Warn("replication: a broker refused a stale request; dropping it", "broker", s.id, "err", err)
			s.mu.Lock()
			s.pending = s.pending[1:]
			s.mu.Unlock()
			continue
		}
		if conn != nil {
			conn.Close()
			conn = nil
		}
		if failures%20 == 0 {
			s.c.lg.Warn("replication: LEADER_AND_ISR not delivered; retrying", "broker", s.id, "addr", s.addr, "err", err)
		}
		failures++
		select {
		case <-s.stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}
