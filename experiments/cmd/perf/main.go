// Command perf runs the speed checks of docs/PERFORMANCE.md (paper §5,
// figures 4 and 5, on one machine over loopback): our broker alone, with
// 0.7's own perf tools. `make perf` and scripts/perf.sh run it.
//
// It builds bin/kafka, starts a broker in its own process through
// internal/kafkaproc (the launcher the experiments use, with the same
// settings: broker.Shipped, printed first) on a free port and a temporary
// log.dir, then runs
//  1. producer-perf, batch 50, to topic perf50   (--messages)
//  2. consumer-perf over perf50, --fetch-size bytes per fetch, every CRC checked
//  3. producer-perf, batch 1,  to topic perf1    (--b1-messages)
//     (both producers in the paper's magic-0 format, --magic 0: 9 bytes of header)
//
// The consumer runs right after batch 50, as the consumer probe of
// experiments/ceiling reads a file written moments before: on this VM page
// cache that nobody touches for about a minute may be paged out (DAMON's
// pageout scheme, where the guest runs it), and the batch-1 run takes
// longer than that. Before
// it, perf prints how much of perf50's log is in the page cache (mincore).
//
// and prints, for each, the broker's CPU time during it, the tool's tenth
// table and its "result:" line (with settings=<name> added); every step
// names the load average and the page cache. It then stops the broker with
// SIGTERM, checks the shutdown was clean and removes the temporary folder.
// A producer's time runs until the broker holds (has flushed) every message.
//
//	perf --messages 10000000                  # the full requirement
//	perf --phases b1 --messages 10000000      # only the batch-1 producer
//	perf --strace                             # also count write(2) per request
//	perf --profile-dir /tmp/prof              # CPU profiles of broker and tools
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kafkarepro/kafkarepro/experiments/machine"
	"github.com/kafkarepro/kafkarepro/internal/kafkaproc"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
	"github.com/kafkarepro/kafkarepro/kafka/properties"
	"github.com/kafkarepro/kafkarepro/kafka/schedstat"
)

type options struct {
	messages, b1Messages, size, fetchSize int
	phases                                []string
	strace, dropCache                     bool
	profileDir, outDir                    string
	holdFreed                             bool
	bin                                   string // the kafka command to build and run
	set                                   map[string]string
	producerProps                         string // producer-perf's --producer-props
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("perf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.messages, "messages", 10_000_000, "messages per producer run and for the consumer")
	fs.IntVar(&o.b1Messages, "b1-messages", 0, "messages of the batch-1 run (0: --messages)")
	fs.IntVar(&o.size, "message-size", 200, "payload bytes")
	fs.IntVar(&o.fetchSize, "fetch-size", 307200, "consumer bytes per fetch")
	phases := fs.String("phases", "b50 consumer b1", "which runs, in this order (consumer reads perf50, so it needs b50 before it)")
	fs.BoolVar(&o.dropCache, "drop-cache", false, "drop the page cache before every producer run (root: sync, then 1 into /proc/sys/vm/drop_caches), so each starts from the same state, except once b50 has written what a later consumer run reads from the page cache, as in §5")
	fs.BoolVar(&o.holdFreed, "hold-freed-memory", true, "on a VM whose kernel reports freed pages to its host, keep them in the guest for the run (root; machine.HoldFreedMemory), so that a page written again does not cost a host fault")
	fs.BoolVar(&o.strace, "strace", false, "also run a 100,000-message batch-1 producer under `strace -f -c` (write system calls per request)")
	fs.StringVar(&o.profileDir, "profile-dir", "", "write CPU profiles of the broker and of every tool run there (broker.prof, producer50.prof, ...)")
	fs.StringVar(&o.outDir, "out-dir", "", "keep every tool's full output there")
	fs.StringVar(&o.bin, "kafka-bin", "bin/kafka", "where to build the kafka command (relative paths: to the repository root)")
	set := fs.String("set", "", "server.properties settings over the shipped ones, key=value[,key=value...] (for instance produce.coalesce.max.us=0)")
	fs.StringVar(&o.producerProps, "producer-props", "", "producer properties over the defaults for both producer runs, key=value[,key=value...] (for instance socket.nagle.disable=true)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	if o.set, err = properties.ParseList(*set); err != nil {
		return o, fmt.Errorf("--set: %w", err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.b1Messages == 0 {
		o.b1Messages = o.messages
	}
	if o.messages <= 0 || o.b1Messages <= 0 || o.size <= 0 || o.fetchSize <= 0 {
		return o, errors.New("--messages, --b1-messages, --message-size and --fetch-size must be positive")
	}
	o.phases = strings.Fields(*phases)
	for _, ph := range o.phases {
		if ph != "b50" && ph != "b1" && ph != "consumer" {
			return o, fmt.Errorf("unknown phase %q in --phases (want b50, b1, consumer)", ph)
		}
	}
	return o, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		stop()
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "perf:", err)
		os.Exit(2)
	}
	err = run(ctx, o, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "perf:", err)
		os.Exit(1)
	}
}

// say prints a step with the load average and the page cache.
func say(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "== %s (%s)\n", fmt.Sprintf(format, args...), machine.ReadLoad())
}

func run(ctx context.Context, o options, w io.Writer) (err error) {
	repo, err := localsvc.RepoDir()
	if err != nil {
		return err
	}
	bin := o.bin
	if !filepath.IsAbs(bin) {
		bin = filepath.Join(repo, bin)
	}
	// What the run's logs take in the page cache: each producer run's messages with their 9-byte headers.
	var logBytes int64
	for _, ph := range o.phases {
		switch ph {
		case "b50":
			logBytes += int64(o.messages) * int64(o.size+9)
		case "b1":
			logBytes += int64(o.b1Messages) * int64(o.size+9)
		}
	}
	_, restore := machine.HoldForRun(w, o.holdFreed, os.TempDir(), logBytes)
	defer restore()
	say(w, "building %s", o.bin)
	if err := kafkaproc.Build(ctx, repo, bin); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "kafka-perf.")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	out := o.outDir
	if out == "" {
		out = filepath.Join(tmp, "out")
	}
	for _, d := range []string{out, o.profileDir} {
		if d != "" {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
	}
	prof := func(name string) []string {
		if o.profileDir == "" {
			return nil
		}
		return []string{"--cpuprofile=" + filepath.Join(o.profileDir, name+".prof")}
	}

	broker, err := kafkaproc.Start(ctx, kafkaproc.Options{Bin: bin, Dir: filepath.Join(tmp, "broker"), Args: prof("broker"), Override: o.set})
	if err != nil {
		return err
	}
	defer func() {
		if broker != nil {
			err = errors.Join(err, broker.Stop())
		}
	}()
	settings := broker.Settings()
	say(w, "broker started on %s, log.dir %s, settings %s", broker.Addr(), broker.LogDir(), settings)
	fmt.Fprintf(w, "broker settings %s: %s\n", settings, oneLine(broker.Properties()))
	r := runner{w: w, bin: bin, out: out, broker: broker, settings: settings}

	for i, ph := range o.phases {
		// The consumer reads what b50 wrote from the page cache, as in §5:
		// the cache is not dropped once b50 has written what a later
		// consumer run reads (dropping it would measure the disk).
		if o.dropCache && ph != "consumer" && !(slices.Contains(o.phases[:i], "b50") && slices.Contains(o.phases[i:], "consumer")) {
			if err := machine.DropPageCache(); err != nil {
				return err
			}
			say(w, "dropped the page cache before %s", ph)
		}
		var err error
		switch ph {
		case "b50":
			err = r.tool(ctx, "producer50", prof("producer50"), "producer-perf", "--broker-list", broker.Addr(), "--topic", "perf50",
				"--messages", strconv.Itoa(o.messages), "--message-size", strconv.Itoa(o.size), "--batch-size", "50", "--magic", "0", "--producer-props", o.producerProps)
		case "b1":
			err = r.tool(ctx, "producer1", prof("producer1"), "producer-perf", "--broker-list", broker.Addr(), "--topic", "perf1",
				"--messages", strconv.Itoa(o.b1Messages), "--message-size", strconv.Itoa(o.size), "--batch-size", "1", "--magic", "0", "--producer-props", o.producerProps)
		case "consumer":
			dir := filepath.Join(broker.LogDir(), "perf50-0")
			if res, total, rerr := machine.Resident(dir); rerr == nil {
				fmt.Fprintf(w, "perf50's log before the consumer: %d of %d MB in the page cache (mincore)\n",
					res>>20, total>>20)
			}
			err = r.tool(ctx, "consumer", prof("consumer"), "consumer-perf", "--broker-list", broker.Addr(), "--topic", "perf50",
				"--messages", strconv.Itoa(o.messages), "--fetch-size", strconv.Itoa(o.fetchSize), "--idle-timeout", "5s")
		}
		if err != nil {
			return err
		}
	}
	if o.strace {
		if err := r.strace(ctx, o.size); err != nil {
			return err
		}
	}

	say(w, "stopping the broker (SIGTERM)")
	stopErr := broker.Stop()
	broker = nil
	if stopErr != nil {
		return stopErr
	}
	fmt.Fprintf(w, "broker: clean shutdown (exit 0, %s/.kafka_cleanshutdown written)\n", r.broker.LogDir())
	// The flusher's fsyncs per partition (kafka/log Log.Fsyncs) and the coalesced sleeps (broker.CoalesceStats), from the broker's log.
	if b, err := os.ReadFile(r.broker.LogPath()); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "log closed: its fsyncs") || strings.Contains(l, "coalesced_sleeps") {
				fmt.Fprintln(w, "broker:", l)
			}
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "summary (broker settings %s):\n", settings)
	for _, l := range r.results {
		fmt.Fprintln(w, l)
	}
	return nil
}

// oneLine is props as "k=v k=v ...", sorted, without the keys every launch
// sets for itself (hostname, port, log.dir).
func oneLine(props map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if k != "hostname" && k != "port" && k != "log.dir" {
			kv = append(kv, k+"="+props[k])
		}
	}
	return strings.Join(kv, " ")
}

// runner runs the perf tools against the broker.
type runner struct {
	w        io.Writer
	bin, out string
	broker   *kafkaproc.Process
	settings string
	results  []string
}

// tool runs `bin/kafka ARGS...`, keeps its output in out/NAME.out, and
// prints the broker's CPU during it, the tool's tenth tables and its result
// line.
func (r *runner) tool(ctx context.Context, name string, extra []string, args ...string) error {
	say(r.w, "%s: %s %s", name, r.bin, strings.Join(args, " "))
	path := filepath.Join(r.out, name+".out")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	pid := strconv.Itoa(r.broker.Pid())
	run0, wait0, _ := schedstat.Read(pid)
	cmd := exec.CommandContext(ctx, r.bin, append(args, extra...)...)
	cmd.Stdout, cmd.Stderr = f, f
	var samples []brokerSample
	if err = cmd.Start(); err == nil {
		stopSampling := sampleBroker(r.broker.Pid(), cmd.Process.Pid)
		err = cmd.Wait()
		samples = stopSampling()
	}
	f.Close()
	if err != nil {
		b, _ := os.ReadFile(path)
		r.w.Write(b)
		return fmt.Errorf("%s failed: %w (output in %s)", name, err, path)
	}
	run1, wait1, ok := schedstat.Read(pid)
	if ok {
		fmt.Fprintf(r.w, "broker during %s: %.3f s of CPU, %.3f s runnable but waiting for a CPU\n", name,
			(run1 - run0).Seconds(), (wait1 - wait0).Seconds())
	}
	printTenths(r.w, name, samples)
	return r.report(name, path)
}

// report prints the tool's output from its "rate per tenth" table on, and
// its result line as "NAME result: ... settings=SETTINGS".
func (r *runner) report(name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	tables := false
	var result string
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "result:"):
			result = l + " settings=" + r.settings
		case strings.HasPrefix(l, "rate per tenth"):
			tables = true
			fallthrough
		case tables:
			fmt.Fprintln(r.w, l)
		}
	}
	if result == "" {
		return fmt.Errorf("%s printed no result line (output in %s)", name, path)
	}
	fmt.Fprintf(r.w, "%s %s\n", name, result)
	r.results = append(r.results, result)
	return sc.Err()
}

// strace runs a 100,000-message batch-1 producer under `strace -f -c` and
// prints its count of write system calls.
func (r *runner) strace(ctx context.Context, size int) error {
	if _, err := exec.LookPath("strace"); err != nil {
		return errors.New("--strace needs strace (apt-get install -y strace)")
	}
	say(r.w, "strace: batch-1 producer, 100000 messages")
	counts := filepath.Join(r.out, "strace.txt")
	path := filepath.Join(r.out, "strace-producer.out")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "strace", "-f", "-c", "-e", "trace=write,sendto,sendmsg,writev", "-o", counts,
		r.bin, "producer-perf", "--broker-list", r.broker.Addr(), "--topic", "perfstrace",
		"--messages", "100000", "--message-size", strconv.Itoa(size), "--batch-size", "1", "--magic", "0")
	cmd.Stdout, cmd.Stderr = f, f
	start := time.Now()
	err = cmd.Run()
	f.Close()
	if err != nil {
		return fmt.Errorf("strace producer-perf: %w (output in %s)", err, path)
	}
	b, err := os.ReadFile(counts)
	if err != nil {
		return err
	}
	r.w.Write(b)
	fmt.Fprintf(r.w, "(strace run took %.1f s; its rate means nothing, ptrace stops every system call)\n", time.Since(start).Seconds())
	out, _ := os.ReadFile(path)
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "result:") {
			fmt.Fprintf(r.w, "strace-producer1 %s settings=%s\n", l, r.settings)
		}
	}
	return nil
}

// brokerSample is the broker's CPU, CPU wait and bytes written to storage
// (write_bytes of /proc/<pid>/io) at one moment, with its read(2) calls
// and the bytes they returned (syscr, rchar) and the tool's write(2) calls
// (syscw; an attempt that found the socket full counts too), and the
// machine's count of freed memory reported to its host (-1: none).
type brokerSample struct {
	at                time.Time
	run, wait         time.Duration
	writeBytes        int64
	reads, readBytes  int64
	toolWrites        int64
	toolRun           time.Duration
	haveSys, haveTool bool
	// machine is the whole machine's counters (/proc/stat, the memory
	// reported to the host); haveMachine is false where they cannot be read.
	machine     machine.ActivitySample
	haveMachine bool
}

// sampleBroker samples the broker (and the tool's process, tool) every
// 50 ms until the returned function is called, which returns the samples
// (the first taken at once).
func sampleBroker(pid, tool int) func() []brokerSample {
	var last brokerSample // the tool's counters once it has exited
	read := func() (brokerSample, bool) {
		run, wait, ok := schedstat.Read(strconv.Itoa(pid))
		io, err := localsvc.ProcessIO(pid)
		if !ok || err != nil {
			return brokerSample{}, false
		}
		s := brokerSample{at: time.Now(), run: run, wait: wait, writeBytes: io.WriteBytes}
		s.machine, s.haveMachine = machine.ReadActivity()
		s.machine.At = s.at
		if c, err := syscalls(pid); err == nil {
			s.reads, s.readBytes, s.haveSys = c["syscr"], c["rchar"], true
		}
		if c, err := syscalls(tool); err == nil {
			s.toolWrites = c["syscw"]
			s.toolRun, _, s.haveTool = schedstat.Read(strconv.Itoa(tool))
		} else {
			// The tool has exited (the last sample): what it did last.
			s.toolWrites, s.toolRun, s.haveTool = last.toolWrites, last.toolRun, last.haveTool
		}
		last = s
		return s, true
	}
	return machine.StartPeriodic(50*time.Millisecond, read).Stop
}

// printTenths prints the broker's work in each tenth of a run's time: CPU
// seconds, seconds runnable but waiting for a CPU, MB written to storage,
// and MB per CPU second. A tenth in which the broker's CPU per byte grows
// did more work of ours per message; one in which only the wait grows was
// slowed by the machine.
//
// With the read(2) counts it also prints the broker's reads and the bytes
// per read (a batch-1 producer's request is 230 bytes, and a read that
// finds the socket empty counts too, so ~300 B/read or less is a broker
// woken for about every request), and the tool's write(2) calls and CPU
// seconds in the tenth; and what the whole machine did in the tenth
// (machine.Tenths): the share of both CPUs' time idle and stolen by the
// host, and, on a guest whose kernel counts it, the MB of freed memory
// reported to the host. A slow tenth with steal or memory reported was
// slowed by the machine; one with neither is ours to explain.
func printTenths(w io.Writer, name string, s []brokerSample) {
	if len(s) < 11 {
		return
	}
	var tenths []machine.ActivityTenth // nil unless every sample read the machine
	acts := make([]machine.ActivitySample, len(s))
	for i, x := range s {
		acts[i] = x.machine
		if !x.haveMachine {
			acts = nil
			break
		}
	}
	if acts != nil {
		tenths = machine.Tenths(acts)
	}
	fmt.Fprintf(w, "broker per tenth of %s's time (every 50 ms: Linux schedstat, /proc/<pid>/io, /proc/stat):\n", name)
	fmt.Fprintf(w, "%6s %8s %8s %10s %10s %12s %10s %10s %12s %10s %7s %7s %12s\n", "tenth", "ends s", "cpu s", "cpuwait s", "write MB", "MB / cpu s",
		"reads", "B / read", "tool writes", "tool cpu s", "idle %", "steal %", "reported MB")
	first := s[0]
	prev := first
	for k, j := range machine.TenthEnds(len(s), func(i int) time.Time { return s[i].at }) {
		i := k + 1
		cur := s[j]
		cpu, mb := (cur.run - prev.run).Seconds(), float64(cur.writeBytes-prev.writeBytes)/1e6
		per := 0.0
		if cpu > 0 {
			per = mb / cpu
		}
		fmt.Fprintf(w, "%6d %8.2f %8.3f %10.3f %10.1f %12.1f", i, cur.at.Sub(first.at).Seconds(), cpu, (cur.wait - prev.wait).Seconds(), mb, per)
		if cur.haveSys && prev.haveSys {
			reads := cur.reads - prev.reads
			fmt.Fprintf(w, " %10d %10.0f", reads, float64(cur.readBytes-prev.readBytes)/float64(max(reads, 1)))
		} else {
			fmt.Fprintf(w, " %10s %10s", "-", "-")
		}
		if cur.haveTool && prev.haveTool {
			fmt.Fprintf(w, " %12d %10.3f", cur.toolWrites-prev.toolWrites, (cur.toolRun - prev.toolRun).Seconds())
		} else {
			fmt.Fprintf(w, " %12s %10s", "-", "-")
		}
		if tenths != nil {
			fmt.Fprintf(w, " %7.0f %7.0f", tenths[k].Idle, tenths[k].Steal)
		} else {
			fmt.Fprintf(w, " %7s %7s", "-", "-")
		}
		if tenths != nil && tenths[k].ReportedMB != nil {
			fmt.Fprintf(w, " %12.0f", *tenths[k].ReportedMB)
		} else {
			fmt.Fprintf(w, " %12s", "-")
		}
		fmt.Fprintln(w)
		prev = cur
	}
}

// syscalls reads the counters of /proc/<pid>/io ("syscr: 123" lines:
// rchar, wchar, syscr, syscw, read_bytes, write_bytes, ...).
func syscalls(pid int) (map[string]int64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "io"))
	if err != nil {
		return nil, err
	}
	c := map[string]int64{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				c[strings.TrimSpace(k)] = n
			}
		}
	}
	if _, ok := c["syscr"]; !ok {
		return nil, fmt.Errorf("no syscr line in /proc/%d/io", pid)
	}
	return c, nil
}
