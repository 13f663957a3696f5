// Command reproduce runs the §5 experiments of the NetDB'11 Kafka paper
// against our Kafka rebuild, ActiveMQ and RabbitMQ, and writes the CSV
// files, summary.json, figures 4 and 5, the storage figure and REPORT.md
// into one results folder.
//
//	go run ./experiments/cmd/reproduce --quick --systems kafka
//	go run ./experiments/cmd/reproduce                      # the paper's 10,000,000 messages
//	go run ./experiments/cmd/reproduce --check-ratio 2      # exit 1 unless we are 2x faster
//	go run ./experiments/cmd/reproduce --replot results/X   # redraw a run's figures and REPORT.md
//	go run ./experiments/cmd/reproduce --services local     # the Debian packages even where Docker runs
//	go run ./experiments/cmd/reproduce --network 1gbit      # servers and clients on two hosts joined by a 1 Gb/s link (root)
//
// The servers run in Docker containers whenever a Docker engine answers
// (--services auto, the default; the images are reused, pulled or built by
// scripts/build-images.sh first), and as local processes otherwise; the run
// prints which, and why, at its start and in REPORT.md.
//
// The exit code is 0 when every test ran and every ratio check passed, 1
// when a system failed (its error is in summary.json; the others were still
// measured) or a check failed, and 2 for a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/experiments"
	"github.com/kafkarepro/kafkarepro/experiments/link"
	"github.com/kafkarepro/kafkarepro/experiments/machine"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
	"github.com/kafkarepro/kafkarepro/kafka/properties"
	"github.com/kafkarepro/kafkarepro/paper"
)

// QuickMessages is --quick's message count.
const QuickMessages = 200_000

type options struct {
	systems     []string
	messages    int
	size        int
	out         string
	services    string
	checkRatio  float64
	keep        bool
	testTimeout time.Duration
	verbose     bool
	replot      string
	compression int // messages per codec of the compression experiment; 0: not run
	ceiling     bool
	holdFreed   bool          // machine.HoldFreedMemory for the run
	latency     time.Duration // paced phase per flush setting of figure 7; 0: not run
	latencyRate int           // its producer's rate (0: half our batch-1 producer's)
	// latencyBaseline are settings figure 7 is measured with a second time,
	// flush setting by flush setting (latency.Config.Baseline), and figure
	// 6's acks=-1 modes, mode by mode (replication.Config.Baseline); nil: not.
	latencyBaseline map[string]string
	replication     int       // messages per mode of figure 6's replication experiment; 0: not run
	protocols       int       // messages per path of the protocols experiment; 0: not run
	network         link.Spec // loopback, or the link of network.go
	beside          string    // a run over the other path, for REPORT.md
	// Set in the child of a run over a link (network.go): where the local
	// provider starts servers and keeps their files.
	host localsvc.Host
	root string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("reproduce", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	systems := fs.String("systems", "kafka,activemq,rabbitmq", "comma-separated systems to measure")
	fs.IntVar(&o.messages, "messages", 10_000_000, "messages per test (the paper: 10,000,000)")
	fs.IntVar(&o.size, "message-size", 200, "bytes per message (the paper: 200)")
	quick := fs.Bool("quick", false, fmt.Sprintf("a short run: %d messages (overrides --messages)", QuickMessages))
	fs.StringVar(&o.out, "out", "", "output folder (default results/<UTC timestamp>)")
	fs.StringVar(&o.services, "services", "auto", "where servers run: local (Debian packages), containers (Docker), or auto: containers whenever a Docker engine answers and the images can be made, else local")
	fs.Float64Var(&o.checkRatio, "check-ratio", 0, "exit 1 unless our batch-50 producer and our consumer are at least this many times faster than every other system")
	fs.BoolVar(&o.keep, "keep", false, "keep the servers' data and logs")
	fs.DurationVar(&o.testTimeout, "test-timeout", 0, "bound on one producer or consumer test (0: none)")
	fs.BoolVar(&o.verbose, "v", false, "log server starts and stops")
	fs.StringVar(&o.replot, "replot", "", "redraw the figures and REPORT.md of an existing run folder, and run nothing")
	replication := fs.Int("replication-messages", -1, "messages per mode of the replication experiment, figure 6 (default: --messages between 1,000,000 and 2,000,000; 0 skips it)")
	network := fs.String("network", link.Loopback, "loopback, or the rate of a link between a server host and a client host (network namespaces, tc tbf; needs root): 1gbit (the paper's), 10gbit, 100mbit")
	fs.StringVar(&o.beside, "beside", "", "a run folder measured over the other path (loopback or a link), set beside this run in REPORT.md")
	protocolsN := fs.Int("protocols-messages", -1, "messages per path of the protocols experiment, the Kafka protocol (franz-go) beside the paper's (default: --messages, at most 2,000,000; 0 skips it)")
	compression := fs.Int("compression-messages", -1, "messages per codec of the compression experiment (default: --messages, at most 1,000,000; 0 skips it)")
	latency := fs.Duration("latency-seconds", -1, "paced phase per flush setting of figure 7, the latency experiment (default 20s, 4s with --quick; 0 skips it)")
	fs.IntVar(&o.latencyRate, "latency-rate", 0, "figure 7's producer rate in msg/s (0: half our batch-1 producer's rate in this run)")
	baseline := fs.String("latency-baseline", "produce.coalesce.max.us=0,log.grown.buffers.max=0,producer:socket.nagle.disable=true", "settings key=value[,key=value] to measure figure 7 with a second time, each flush setting right after the first, and figure 6's acks=-1 modes, each right after the first, for REPORT.md's before-and-after tables: broker settings, and producer properties as producer:KEY (default: the produce path before the broker coalesced its wake-ups and grew its logs' write buffers and before the producer left Nagle's algorithm on: coalescing off, no grown write buffers, the producer's TCP_NODELAY on; empty: not)")
	fs.BoolVar(&o.holdFreed, "hold-freed-memory", true, "on a VM whose kernel reports freed pages to its host, keep them in the guest for the run (root; machine.HoldFreedMemory), so that a page written again does not cost a host fault; REPORT.md says which")
	fs.BoolVar(&o.ceiling, "ceiling", true, "measure the machine's ceiling (experiments/ceiling) right after our tests, for REPORT.md")
	var err error
	if err = fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *quick {
		o.messages = QuickMessages
	}
	for _, s := range strings.Split(*systems, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if s != "kafka" && s != "activemq" && s != "rabbitmq" {
			return o, fmt.Errorf("unknown system %q (known: kafka, activemq, rabbitmq)", s)
		}
		o.systems = append(o.systems, s)
	}
	if len(o.systems) == 0 {
		return o, errors.New("--systems names no system")
	}
	if o.messages <= 0 || o.size <= 0 {
		return o, fmt.Errorf("--messages %d and --message-size %d must be positive", o.messages, o.size)
	}
	switch o.services {
	case "local", "containers", "auto":
	default:
		return o, fmt.Errorf("--services %q: want local, containers or auto", o.services)
	}
	o.compression = *compression
	if o.compression < 0 {
		o.compression = min(o.messages, 1_000_000)
	}
	o.replication = *replication
	if o.replication < 0 {
		o.replication = min(max(o.messages, 1_000_000), 2_000_000) // --quick's 200,000 would last under a second in the 1-replica mode
	}
	o.protocols = *protocolsN
	if o.protocols < 0 {
		o.protocols = min(o.messages, 2_000_000)
	}
	if !slices.Contains(o.systems, compare.Ours) {
		o.compression, o.replication, o.protocols = 0, 0, 0
	}
	o.latency = *latency
	if o.latencyBaseline, err = properties.ParseList(*baseline); err != nil {
		return o, fmt.Errorf("--latency-baseline %q: want key=value[,key=value]: %w", *baseline, err)
	}
	if o.latency < 0 {
		o.latency = 20 * time.Second
		if *quick {
			o.latency = 4 * time.Second
		}
	}
	if !slices.Contains(o.systems, compare.Ours) {
		o.latency = 0
	}
	if o.network, err = link.Parse(*network); err != nil {
		return o, err
	}
	if !o.network.IsLoopback() {
		switch o.services {
		case "containers":
			return o, fmt.Errorf("--network %s starts the servers with the local provider inside the server host's namespace; --services containers cannot (Docker puts containers on its own network): use --services local", o.network.Name)
		case "auto":
			o.services = "local"
		}
	}
	if o.out == "" {
		o.out = filepath.Join("results", time.Now().UTC().Format("20060102T150405Z"))
	}
	return o, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "reproduce:", err)
		return 2
	}
	if o.replot != "" {
		return replot(o, stdout, stderr)
	}
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	lnk, root, err := inChild()
	if err != nil {
		fmt.Fprintln(stderr, "reproduce:", err)
		return 1
	}
	// The parameters are the machine's: a run over a link holds them once,
	// here, and its child (inside a namespace) only reads them.
	freePages, restore := machine.ReadFreePageReporting(), func() {}
	if lnk == nil {
		// 600 bytes per message: the full runs' stores took 209 (ours), about 400 (RabbitMQ) and
		// 780 (ActiveMQ's KahaDB) per 200-byte message; MaxWarm caps a 10 M-message run's.
		freePages, restore = machine.HoldForRun(stderr, o.holdFreed, os.TempDir(), int64(o.messages)*3*int64(o.size))
	}
	defer restore()
	if !o.network.IsLoopback() && lnk == nil {
		return overLink(ctx, o, args, stdout, stderr, logger)
	}
	if lnk != nil {
		o.host, o.root = serverHost(lnk), root
	}
	beside, err := loadBeside(o.beside)
	if err != nil {
		fmt.Fprintln(stderr, "reproduce:", err)
		return 1
	}
	fig, err := paper.Load()
	if err != nil {
		fmt.Fprintln(stderr, "reproduce:", err)
		return 1
	}
	loadStart := machine.ReadLoad()
	prov, why, err := newProvider(ctx, o, logger, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "reproduce:", err)
		return 1
	}
	defer prov.Close()
	if lnk != nil {
		why = "the link's servers run in the server host's network namespace, which only the local provider can start them in (Docker's containers live on Docker's network)"
	}
	fmt.Fprintf(stderr, "reproduce: services %s (%s)\n", prov.Name(), why)

	// The run is a list of experiments: the §5 tests (figures 4 and 5, the
	// storage bars and, with --ceiling, the machine's ceiling), then the
	// further figures (further.go) unless the §5 tests were interrupted.
	sum, network, runErr := section5(ctx, o, lnk, prov, logger, fig, loadStart, stderr)
	if runErr == nil {
		for _, e := range further(o, stderr) {
			if !e.on {
				continue
			}
			if err := e.run(ctx, sum); err != nil {
				sum.Errors = append(sum.Errors, e.name+": "+err.Error())
			}
		}
	}
	sum.Run = filepath.Base(o.out)
	sum.Finished = time.Now().UTC()
	sum.Seconds = sum.Finished.Sub(sum.Started).Seconds()
	sum.Command = "reproduce " + strings.Join(args, " ")
	sum.Services, sum.ServicesWhy = prov.Name(), why
	sum.LoadAtStart, sum.LoadAtEnd = &loadStart, new(machine.ReadLoad())
	sum.FreePages = &freePages
	sum.Machine = machine.Describe(prov.DataRoot())
	sum.Machine.Network = network.Path
	sum.Network, sum.Beside = network, beside
	if runErr != nil {
		sum.Errors = append(sum.Errors, "run interrupted: "+runErr.Error())
	}
	if err := experiments.Write(o.out, sum, fig); err != nil {
		fmt.Fprintln(stderr, "reproduce: writing results:", err)
		return 1
	}
	printSummary(stdout, sum)
	fmt.Fprintf(stdout, "results in %s (took %.1fs)\n", o.out, sum.Seconds)
	// A run that recorded errors still wrote everything it measured, but
	// says so in its exit code.
	code := 0
	if runErr != nil || len(sum.Errors) > 0 {
		fmt.Fprintf(stdout, "%d error(s) recorded in %s\n", len(sum.Errors), filepath.Join(o.out, "summary.json"))
		code = 1
	}
	if r := sum.Replication; r != nil {
		// The speed targets are printed and written in REPORT.md, not enforced: on a machine of two cores
		// shared by the three brokers, ZooKeeper and the producer, acks=-1 is below its target (REPORT.md
		// says what bounds it), and a check that always fails would catch no regression.
		printReplication(stdout, r)
		lines, _ := r.Checks()
		for _, l := range lines {
			fmt.Fprintln(stdout, l)
		}
	}
	if o.checkRatio > 0 {
		lines, ok := experiments.CheckRatio(sum.Systems, o.checkRatio)
		for _, l := range lines {
			fmt.Fprintln(stdout, l)
		}
		if !ok {
			fmt.Fprintf(stdout, "check-ratio %.2f: FAILED\n", o.checkRatio)
			code = 1
		}
	}
	return code
}

func printSummary(w io.Writer, s *experiments.Summary) {
	fmt.Fprintf(w, "%-10s %-9s %6s %14s %10s\n", "system", "test", "batch", "msg/s", "MB/s")
	for _, a := range s.Averages {
		status := ""
		if !a.OK {
			status = "  FAILED"
		}
		fmt.Fprintf(w, "%-10s %-9s %6d %14.0f %10.2f%s\n", a.System, a.Test, a.Batch, a.MsgPerS, a.MBPerS, status)
	}
	for _, r := range s.Systems {
		if st, ok := r.MainStorage(); ok {
			fmt.Fprintf(w, "%-10s storage %.1f bytes/message on disk, overhead %.1f bytes\n", r.Name, st.BytesPerMessage, st.OverheadBytes)
		}
	}
	for _, r := range s.Systems {
		if r.Consumer != nil && r.Consumer.ServerIO != nil && r.Consumer.ServerIO.Measured {
			fmt.Fprintf(w, "%-10s server wrote %d bytes to storage during the consumer test (wchar %d)\n",
				r.Name, r.Consumer.ServerIO.WriteBytes, r.Consumer.ServerIO.WChar)
		}
	}
	for _, r := range s.Ratios {
		paperSays := "no paper value"
		if r.PaperMin > 0 {
			paperSays = fmt.Sprintf("paper: >= %.3g", r.PaperMin)
		}
		fmt.Fprintf(w, "ratio %-40s %8.2f  (%s)\n", r.Name, r.Value, paperSays)
	}
	for _, e := range s.Errors {
		fmt.Fprintln(w, "ERROR:", e)
	}
}

// replot redraws a run folder from its summary.json and series.csv, with
// the run of --beside set beside it if given.
func replot(o options, stdout, stderr io.Writer) int {
	dir := o.replot
	fig, err := paper.Load()
	if err == nil {
		var sum *experiments.Summary
		if sum, err = experiments.Load(dir); err == nil {
			if o.beside != "" {
				sum.Beside, err = loadBeside(o.beside)
			}
			if err == nil {
				err = experiments.Write(dir, sum, fig)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "reproduce: replot:", err)
		return 1
	}
	fmt.Fprintf(stdout, "redrew %s\n", dir)
	return 0
}

// section5 runs the §5 tests, system after system, with the ceiling's
// probes beside ours when --ceiling asks, and returns their summary, the
// network they ran over, and the error that interrupted them, if any.
func section5(ctx context.Context, o options, lnk *link.Link, prov compare.Provider, logger *slog.Logger, fig *paper.Figures, loadStart machine.Load, stderr io.Writer) (*experiments.Summary, *experiments.Network, error) {
	cfg := experiments.DefaultConfig()
	cfg.Messages, cfg.MessageSize, cfg.TestTimeout, cfg.Log = o.messages, o.size, o.testTimeout, logger
	cfg.Progress = experiments.NewProgress(stderr) // draws in place only on a terminal
	var targets []experiments.Target
	for _, name := range o.systems {
		targets = append(targets, target(prov, name))
	}
	started := time.Now()
	network := experiments.LoopbackNetwork()
	if lnk != nil {
		network = experiments.LinkNetwork(lnk, runtime.NumCPU(), cfg)
	}
	fmt.Fprintf(stderr, "reproduce: %d messages of %d bytes; systems %s; services %s; network %s (%s); output %s; %s\n",
		o.messages, o.size, strings.Join(o.systems, ","), prov.Name(), network.Setup, network.Hosts, o.out, loadStart)
	// The ceiling's probes run right after our own tests, before the other
	// systems' (minutes of them at full scale), so that each of our figures
	// and the ceiling that bounds it are measured as close together as the
	// run allows: the consumer probe right after our consumer test, with
	// our broker still up, in turns with our consumer reading figure 5's
	// topic again; the producer probes once our broker has stopped and its
	// logs are gone, so that they write into the page cache those freed
	// (ceiling.go).
	var reports []experiments.SystemReport
	var runErr error
	var ceil ceilingRun
	if o.ceiling {
		cfg.AfterConsumer = ceil.afterConsumer(o, &cfg, stderr)
	}
	for _, t := range targets {
		var r []experiments.SystemReport
		r, runErr = experiments.Run(ctx, cfg, []experiments.Target{t})
		reports = append(reports, r...)
		if runErr != nil {
			break
		}
		if o.ceiling && t.Name == compare.Ours {
			ceil.rest(ctx, o, stderr)
		}
	}
	ceilingRows, ceilingErr := ceil.rows, ceil.err
	sum := experiments.NewSummary(cfg, reports, fig)
	if o.ceiling && slices.Contains(o.systems, compare.Ours) && runErr == nil {
		if ceilingErr != nil {
			sum.Errors = append(sum.Errors, "ceiling: "+ceilingErr.Error())
		}
		experiments.AttachCeiling(sum, ceilingRows)
	}
	sum.Started = started.UTC()
	return sum, network, runErr
}
