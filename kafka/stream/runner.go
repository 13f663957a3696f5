package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// RunnerConfig configures one processor process of a topology.
type RunnerConfig struct {
	// Group is the consumer group the processes of the topology share (0.7's groupid); its checkpoints are
	// under /consumers/<Group>/checkpoints.
	Group string
	// ZkConnect is zk.connect, chroot included.
	ZkConnect string
	// Stages are the topology's stages, each on its own input topic.
	Stages []Stage
	// CheckpointEvery is how many messages a task processes between checkpoints (default 10,000), and
	// CheckpointInterval the longest it keeps unsaved work (default 1 s); a task also checkpoints when it
	// stops (handed over or shut down). Fewer checkpoints are cheaper, and after a crash
	// more input is read again and more results published again.
	CheckpointEvery    int
	CheckpointInterval time.Duration
	// Producer is the output producer's configuration; BrokerList and ZkConnect empty: zk.connect above.
	// RequiredAcks 0 becomes 1: a checkpoint must not cover a result the broker has not taken.
	Producer producer.Config
	// Consumer is the group consumer's configuration; GroupID and ZkConnect are set from above. The zero
	// value: consumer.DefaultGroupConfig. AutoCommitEnable is forced off: tasks resume from their checkpoints.
	Consumer consumer.GroupConfig
	// FetchSize is each task's fetch size (default consumer.DefaultFetchSize).
	FetchSize int32
	// Store keeps the checkpoints; nil: a ZKStore on the runner's ZooKeeper session.
	Store Store
	// Logger: nil is slog.Default().
	Logger *slog.Logger
}

// Runner is one processor process: a member of the topology's consumer group, running a Task for every
// partition Algorithm 1 gives it, each restored from its checkpoint and resuming from the checkpoint's offset.
type Runner struct {
	cfg   RunnerConfig
	log   *slog.Logger
	zk    *zk.Client
	store Store
	prod  *producer.SyncProducer
	group *consumer.GroupConsumer

	stages map[string]*Stage

	mu      sync.Mutex
	running map[[2]string]*taskRun
	// reports holds, per partition this process has run a task for, the task's report as of its last
	// checkpoint (or its stop): one entry per partition, replaced, never added to, so that a task that
	// stops, or that is stopped and given the partition again, is counted once.
	reports map[[2]string]Report
	fatal   error
	failed  chan struct{} // closed when fatal is set
	started bool
}

type taskRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// NewRunner checks cfg and connects to ZooKeeper and the brokers.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	if cfg.Group == "" || cfg.ZkConnect == "" {
		return nil, fmt.Errorf("%w: a runner needs a group and zk.connect (group %q, zk.connect %q)", ErrBadConfig, cfg.Group, cfg.ZkConnect)
	}
	if len(cfg.Stages) == 0 {
		return nil, fmt.Errorf("%w: a runner with no stage", ErrBadConfig)
	}
	stages := map[string]*Stage{}
	for i := range cfg.Stages {
		s := &cfg.Stages[i]
		if err := s.validate(); err != nil {
			return nil, err
		}
		if stages[s.Input] != nil {
			return nil, fmt.Errorf("%w: two stages read %q (each partition has one task, with one stage's processors)", ErrBadConfig, s.Input)
		}
		stages[s.Input] = s
	}
	if cfg.CheckpointEvery <= 0 {
		cfg.CheckpointEvery = 10000
	}
	if cfg.CheckpointInterval <= 0 {
		cfg.CheckpointInterval = time.Second
	}
	if cfg.FetchSize <= 0 {
		cfg.FetchSize = consumer.DefaultFetchSize
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.Default()
	}
	lg = lg.With("component", "stream", "group", cfg.Group)

	gc := cfg.Consumer
	if gc.ZkSessionTimeout == 0 {
		gc = consumer.DefaultGroupConfig()
	}
	gc.GroupID, gc.ZkConnect, gc.AutoCommitEnable, gc.Logger = cfg.Group, cfg.ZkConnect, false, lg
	gc.OwnershipOnly = true // the group gives the partitions; each task reads its own, from its checkpoint

	pc := cfg.Producer
	if pc.BatchSize == 0 && pc.MaxMessageSize == 0 {
		pc = producer.DefaultConfig()
	}
	if pc.BrokerList == "" && pc.ZkConnect == "" {
		pc.ZkConnect = cfg.ZkConnect
	}
	if pc.RequiredAcks == 0 {
		pc.RequiredAcks = 1
	}

	c, err := zk.Open(cfg.ZkConnect, zk.Options{SessionTimeout: gc.ZkSessionTimeout, Logger: lg})
	if err != nil {
		return nil, fmt.Errorf("stream: runner of group %q: %w", cfg.Group, err)
	}
	prod, err := producer.NewSync(pc)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("stream: runner of group %q: output producer: %w", cfg.Group, err)
	}
	g, err := consumer.NewGroupConsumer(gc)
	if err != nil {
		prod.Close()
		c.Close()
		return nil, err
	}
	store := cfg.Store
	if store == nil {
		store = NewZKStore(c, cfg.Group)
	}
	return &Runner{cfg: cfg, log: lg, zk: c, store: store, prod: prod, group: g, stages: stages,
		running: map[[2]string]*taskRun{}, reports: map[[2]string]Report{}, failed: make(chan struct{})}, nil
}

// ID is the runner's consumer id in the group.
func (r *Runner) ID() string { return r.group.ID() }

// Run joins the group and runs the tasks of the partitions the group gives this process until ctx ends
// (then every task checkpoints and the process leaves the group) or a task fails for good (a state too large
// for its checkpoint). A task whose processor or output fails is restored from its checkpoint and started
// again.
func (r *Runner) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return fmt.Errorf("stream: Runner.Run called twice")
	}
	r.started = true
	r.mu.Unlock()
	defer r.close()
	subs := map[string]int{}
	for in := range r.stages {
		subs[in] = 1
	}
	if _, err := r.group.CreateMessageStreams(subs); err != nil {
		return fmt.Errorf("stream: joining group %q: %w", r.cfg.Group, err)
	}
	r.log.Info("joined the group", "consumer", r.group.ID())
	// The tasks follow the group's ownership when it changes (OwnershipChanges), and once a second anyway.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastLog := time.Now()
	var absent time.Time // when our registration was first seen missing
	var logged Report
	for {
		r.reconcile(ctx)
		r.mu.Lock()
		fatal := r.fatal
		r.mu.Unlock()
		if fatal != nil {
			return fatal
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.group.OwnershipChanges():
			continue
		case <-r.failed:
			continue
		case <-tick.C:
		}
		now := time.Now()
		// The group consumer leaves the group when it gives up rebalancing (ErrRebalanceFailed) and then
		// owns nothing; a runner that only followed Owned would sit idle. A registration missing for longer
		// than a session takes to be renewed is that.
		there, err := r.zk.Exists(zk.ConsumerIDPath(r.cfg.Group, r.group.ID()))
		switch {
		case err != nil || there:
			absent = time.Time{}
		case absent.IsZero():
			absent = now
		case now.Sub(absent) > 10*time.Second:
			return fmt.Errorf("stream: runner %s is no longer registered in group %q (its rebalance failed; see the log): %w",
				r.group.ID(), r.cfg.Group, consumer.ErrRebalanceFailed)
		}
		if now.Sub(lastLog) >= 10*time.Second {
			lastLog = now
			if rep := r.Report(); rep.String() != logged.String() {
				r.log.Info("progress", "tasks", r.Tasks(), "report", rep.String())
				logged = rep
			}
		}
	}
}

// reconcile starts a task for every partition the group gave this process and stops the others (§3.2: each
// partition is consumed by one consumer of the group at a time; a task that lags behind a rebalance cannot
// overwrite its successor's checkpoint, ErrDeposed).
func (r *Runner) reconcile(ctx context.Context) {
	owned := map[[2]string]bool{}
	if ctx.Err() == nil {
		for topic, parts := range r.group.Owned() {
			for _, p := range parts {
				owned[[2]string{topic, p}] = true
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, tr := range r.running {
		select {
		case <-tr.done:
			delete(r.running, k)
			continue
		default:
		}
		if !owned[k] {
			tr.cancel()
		}
	}
	for k := range owned {
		if r.running[k] != nil {
			continue
		}
		tctx, cancel := context.WithCancel(ctx)
		tr := &taskRun{cancel: cancel, done: make(chan struct{})}
		r.running[k] = tr
		go r.runTask(tctx, r.stages[k[0]], k[1], tr)
	}
}

// close stops every task (each checkpoints), then leaves the group.
func (r *Runner) close() {
	r.mu.Lock()
	var wait []*taskRun
	for _, tr := range r.running {
		tr.cancel()
		wait = append(wait, tr)
	}
	r.mu.Unlock()
	for _, tr := range wait {
		<-tr.done
	}
	if err := r.group.Close(); err != nil {
		r.log.Warn("leaving the group", "err", err)
	}
	r.prod.Close()
	r.zk.Close()
}

// Report adds up, over the partitions this process has run a task for (running or stopped), each task's
// report as of its last checkpoint: each partition once. A task's report is part of its checkpoint, so it
// counts the partition's messages since the group began, those read by earlier owners of the partition
// included; for one process that ran every partition from the start, its totals are the messages read and
// the results published.
func (r *Runner) Report() Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([][2]string, 0, len(r.reports))
	for k := range r.reports {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1]
	})
	rep := Report{}
	for _, k := range keys { // in partition order, so that the reasons kept are the same from call to call
		rep.Add(r.reports[k])
	}
	return rep
}

// Tasks names the partitions this process runs a task for, "topic/partition", sorted.
func (r *Runner) Tasks() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k := range r.running {
		out = append(out, k[0]+"/"+k[1])
	}
	sort.Strings(out)
	return out
}

// runTask runs the task of one partition until ctx ends, restoring it after a failure.
func (r *Runner) runTask(ctx context.Context, st *Stage, part string, tr *taskRun) {
	defer close(tr.done)
	lg := r.log.With("topic", st.Input, "partition", part)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := r.taskOnce(ctx, st, part, tr, lg)
		switch {
		case err == nil:
			return
		case errors.Is(err, ErrStateTooLarge), errors.Is(err, ErrBadCheckpoint), errors.Is(err, ErrBadConfig):
			lg.Error("task failed for good", "err", err)
			r.mu.Lock()
			if r.fatal == nil {
				r.fatal = err
				close(r.failed)
			}
			r.mu.Unlock()
			return
		case errors.Is(err, ErrDeposed):
			lg.Info("deposed: a newer checkpoint exists; restoring it", "err", err)
		default:
			lg.Warn("task failed; restoring its checkpoint", "err", err, "retry in", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			backoff = min(2*backoff, 5*time.Second)
		}
	}
}

// taskOnce restores the task from its checkpoint and processes its partition from the checkpoint's offset.
func (r *Runner) taskOnce(ctx context.Context, st *Stage, part string, tr *taskRun, lg *slog.Logger) error {
	out := &producerEmitter{p: r.prod}
	task, err := NewTask(*st, part, out)
	if err != nil {
		return err
	}
	data, version, err := r.store.Load(st.Input, part)
	if err != nil {
		return err
	}
	if version != NoCheckpoint {
		if err := task.Restore(data); err != nil {
			return err
		}
	}
	addr, p, err := r.partitionAddr(st.Input, part, lg)
	if err != nil {
		return err
	}
	sc := consumer.NewSimpleConsumer(addr, 30*time.Second)
	defer sc.Close()
	start := task.Offset()
	if start < 0 {
		if start, err = sc.EarliestOffset(st.Input, int32(p)); err != nil {
			return err
		}
	}
	lg.Info("task started", "offset", start, "checkpoint version", version, "report", task.Report().String())
	r.mu.Lock()
	r.reports[[2]string{st.Input, part}] = task.Report() // the checkpoint's: its partition so far
	r.mu.Unlock()
	it := consumer.NewPartitionIterator(sc, st.Input, int32(p), start, r.cfg.FetchSize)
	it.MaxBackoff = 100 * time.Millisecond

	unsaved, last := 0, time.Now()
	reasons := len(task.Report().Reasons) // the skip reasons already logged (by an earlier run of the task)
	save := func() error {
		if unsaved == 0 && version != NoCheckpoint {
			return nil
		}
		if err := out.flush(); err != nil {
			return err
		}
		cp, err := task.Checkpoint()
		if err != nil {
			return err
		}
		if version, err = r.store.Save(st.Input, part, cp, version); err != nil {
			return err
		}
		unsaved, last = 0, time.Now()
		rep := task.Report()
		for _, why := range rep.Reasons[min(reasons, len(rep.Reasons)):] {
			lg.Warn("skipped a message", "reason", why, "skipped so far", rep.Skips())
		}
		reasons = len(rep.Reasons)
		r.mu.Lock()
		r.reports[[2]string{st.Input, part}] = rep
		r.mu.Unlock()
		return nil
	}
	for {
		got := it.Poll()
		if !got && it.Err() == nil {
			// Caught up: checkpoint once CheckpointInterval has passed since the last one, and wait for more
			// until then.
			wait := r.cfg.CheckpointInterval - time.Since(last)
			if wait <= 0 || version == NoCheckpoint {
				if err := save(); err != nil {
					return err
				}
				wait = r.cfg.CheckpointInterval
			}
			wctx, cancel := context.WithTimeout(ctx, wait)
			got = it.Next(wctx)
			cancel()
			if !got {
				if ctx.Err() != nil {
					return r.stop(st, part, task, save, lg)
				}
				if errors.Is(it.Err(), context.DeadlineExceeded) {
					if resume := task.Offset(); resume >= 0 {
						it.SeekTo(resume)
					} else {
						it.SeekTo(start)
					}
					continue
				}
			}
		}
		if !got {
			if ctx.Err() != nil {
				return r.stop(st, part, task, save, lg)
			}
			return fmt.Errorf("stream: reading %s/%s at offset %d: %w", st.Input, part, task.Offset(), it.Err())
		}
		if err := task.Process(it.Offset(), it.NextOffset(), it.Payload()); err != nil {
			return err
		}
		unsaved++
		if unsaved >= r.cfg.CheckpointEvery || (unsaved&1023 == 0 && time.Since(last) >= r.cfg.CheckpointInterval) {
			if err := save(); err != nil {
				return err
			}
		}
		if unsaved&1023 == 0 && ctx.Err() != nil {
			return r.stop(st, part, task, save, lg)
		}
	}
}

// partitionAddr finds the broker to read a partition from: the one its 0.7 name "<brokerid>-<partition>"
// names, or for a replicated topic's partition "<p>" its leader now (docs/PROTOCOL.md §10). A leader that
// moves later makes the task's fetch fail; the task is then restored and finds the new one here.
func (r *Runner) partitionAddr(topic, part string, lg *slog.Logger) (string, int32, error) {
	brokers, err := zk.LiveBrokers(r.zk, lg)
	if err != nil {
		return "", 0, err
	}
	if id, p, err := zk.ParsePartitionName(part); err == nil {
		b, ok := brokers[id]
		if !ok {
			return "", 0, fmt.Errorf("stream: partition %s/%s: broker %d is not registered", topic, part, id)
		}
		return b.Addr(), int32(p), nil
	}
	p, err := strconv.Atoi(part)
	if err != nil || p < 0 {
		return "", 0, fmt.Errorf("%w: partition %q of %q is neither <brokerid>-<partition> nor a number", ErrBadConfig, part, topic)
	}
	var addrs []string
	for _, b := range brokers {
		addrs = append(addrs, b.Addr())
	}
	leaders, hosts, err := consumer.Leaders(addrs, 10*time.Second, topic)
	if err != nil {
		return "", 0, err
	}
	ls := leaders[topic]
	if p >= len(ls) || ls[p] < 0 || hosts[ls[p]] == "" {
		return "", 0, fmt.Errorf("stream: replicated partition %s/%d has no leader now", topic, p)
	}
	return hosts[ls[p]], int32(p), nil
}

// stop checkpoints a task that is handed over or shut down and records its report.
func (r *Runner) stop(st *Stage, part string, task *Task, save func() error, lg *slog.Logger) error {
	err := save()
	rep := task.Report()
	if err == nil {
		r.mu.Lock()
		r.reports[[2]string{st.Input, part}] = rep // a failed save leaves the last checkpoint's
		r.mu.Unlock()
	}
	if err != nil && !errors.Is(err, ErrDeposed) {
		lg.Warn("last checkpoint failed; the next owner resumes from the one before", "err", err)
	}
	lg.Info("task stopped", "offset", task.Offset(), "report", rep.String())
	return nil
}

// producerEmitter holds a task's results until flush publishes them, with the producer's key hash choosing
// each result's partition (§3.3): one request per output partition, holding that partition's results in emit
// order, whatever their keys. Downstream of a repartition the emit order is event-time order, and a reader of
// an output partition sees it unchanged (grouping by key would add disorder between keys of one partition).
type producerEmitter struct {
	p       *producer.SyncProducer
	pending []pendingResult
	arena   []byte
	keys    [][]byte // flush's scratch
	msgs    [][]byte
}

type pendingResult struct {
	topic            string
	key0, key1, val1 int // key arena[key0:key1], value arena[key1:val1]
}

// Emit implements Emitter.
func (e *producerEmitter) Emit(topic string, key, value []byte) error {
	k0 := len(e.arena)
	e.arena = append(append(e.arena, key...), value...)
	e.pending = append(e.pending, pendingResult{topic: topic, key0: k0, key1: k0 + len(key), val1: len(e.arena)})
	return nil
}

func (e *producerEmitter) flush() error {
	// Topic by topic, in the order of each topic's first result (a stage usually has one output topic).
	for i := range e.pending {
		t := e.pending[i].topic
		if t == "" {
			continue // sent with an earlier topic
		}
		e.keys, e.msgs = e.keys[:0], e.msgs[:0]
		for j := i; j < len(e.pending); j++ {
			pr := &e.pending[j]
			if pr.topic != t {
				continue
			}
			e.keys = append(e.keys, e.arena[pr.key0:pr.key1])
			e.msgs = append(e.msgs, e.arena[pr.key1:pr.val1])
			pr.topic = ""
		}
		if err := e.p.SendKeyedEach(t, e.keys, e.msgs); err != nil {
			return fmt.Errorf("stream: publishing %d results to %q: %w", len(e.msgs), t, err)
		}
	}
	e.pending, e.arena = e.pending[:0], e.arena[:0]
	return nil
}
