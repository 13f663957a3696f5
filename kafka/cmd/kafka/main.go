// Command kafka is the one command of this Kafka rebuild (paper §3; the
// tools of Kafka 0.7 listed in docs/PROTOCOL.md §8) with one subcommand per file:
//
//	kafka server-start server.properties [--override key=value]...
//	kafka console-producer --broker-list 0:localhost:9092 --topic t
//	kafka simple-consumer-shell --broker-list localhost:9092 --topic t --partition 0 --offset -2
//	kafka get-offset-shell --broker-list localhost:9092 --topic t --partition 0 --time -1
//	kafka dump-log-segments /tmp/kafka-logs/t-0/00000000000000000000.kafka
//	kafka producer-perf ... / kafka consumer-perf ...
//	kafka stream-count / stream-ctr / stream-ctr-gen / stream-table / stream-join-table (paper §6, kafka/stream)
//
// Each subcommand's file registers it in init with register, so a new tool
// is a new file. `kafka help` lists them; `kafka help NAME` or
// `kafka NAME -h` shows one's flags. Errors go to stderr; the exit code is 2
// for a usage error and 1 for a failure.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
)

// command is one subcommand.
type command struct {
	Name    string
	Args    string // the synopsis after the name, e.g. "FILE..."
	Summary string // one line for `kafka help`
	// Positional says the subcommand takes arguments that are not flags (files); without it an argument
	// that is not a flag is a usage error.
	Positional bool
	// Run runs the subcommand with the arguments after its name.
	Run func(args []string, io stdio) error
}

// stdio is where a subcommand reads and writes.
type stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

var commands = map[string]*command{}

// register adds a subcommand; called from each subcommand file's init.
func register(c *command) {
	if _, dup := commands[c.Name]; dup {
		panic("kafka: subcommand registered twice: " + c.Name)
	}
	commands[c.Name] = c
}

// usageError marks a bad command line (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// newFlags returns a flag set for c that reports errors instead of exiting.
// Go's flag package accepts both -name and --name.
func newFlags(c *command, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "usage: kafka %s %s\n\n%s\n", c.Name, c.Args, c.Summary)
		if hasFlags(fs) {
			fmt.Fprintln(w, "\nflags:")
			printDefaults(fs, w)
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// printDefaults is flag.PrintDefaults with each flag written as the README writes it, --name.
func printDefaults(fs *flag.FlagSet, w io.Writer) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
		if d := f.DefValue; d != "" && d != "0" && d != "false" && d != "0s" {
			if name == "string" {
				d = fmt.Sprintf("%q", d)
			}
			line += " (default " + d + ")"
		}
		fmt.Fprintln(w, line)
	})
}

// parseFlags parses args; -h gives flag.ErrHelp, which exits 0. A subcommand that takes no positional
// arguments (command.Positional) refuses one, naming it: otherwise the flags after it would go unread and be
// reported missing.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if c := commands[fs.Name()]; c != nil && !c.Positional && fs.NArg() > 0 {
		return usagef("unexpected argument %q: every argument of `kafka %s` is a flag (--name value)", fs.Arg(0), c.Name)
	}
	return nil
}

// brokerFlag is the flag naming the broker a shell talks to: --broker-list, as the console tools and 0.8's
// shells name it (the first broker of the list is used), with --broker, this repository's older name, kept.
func brokerFlag(fs *flag.FlagSet) *string {
	s := fs.String("broker-list", "", "the broker: host:port (or id:host:port; of a list, the first)")
	fs.StringVar(s, "broker", "", "the older name of --broker-list")
	return s
}

// firstBroker is the host:port of the first broker of a --broker-list value ("host:port" or "id:host:port",
// comma-separated).
func firstBroker(list string) string {
	b := strings.TrimSpace(strings.Split(list, ",")[0])
	if strings.Count(b, ":") == 2 {
		b = b[strings.IndexByte(b, ':')+1:]
	}
	return b
}

// required reports the first of the named string flags left empty.
func required(fs *flag.FlagSet, names ...string) error {
	for _, n := range names {
		if f := fs.Lookup(n); f != nil && f.Value.String() == "" {
			return usagef("--%s is required", n)
		}
	}
	return nil
}

func main() {
	os.Exit(run(os.Args[1:], stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}

// run is main without the exit, for tests.
func run(args []string, std stdio) int {
	if len(args) == 0 {
		help(nil, std.Err)
		return 2
	}
	name := args[0]
	if name == "help" || name == "-h" || name == "--help" {
		return help(args[1:], std.Out)
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(std.Err, "kafka: unknown command %q (try `kafka help`)\n", name)
		return 2
	}
	err := c.Run(args[1:], std)
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(std.Err, "kafka %s: %v\n(see `kafka help %s`)\n", name, err, name)
		return 2
	default:
		fmt.Fprintf(std.Err, "kafka %s: %v\n", name, err)
		return 1
	}
}

// help lists the subcommands, or shows one's usage.
func help(args []string, w io.Writer) int {
	if len(args) > 0 {
		c, ok := commands[args[0]]
		if !ok {
			fmt.Fprintf(w, "kafka: unknown command %q\n", args[0])
			return 2
		}
		_ = c.Run([]string{"-h"}, stdio{In: strings.NewReader(""), Out: w, Err: w})
		return 0
	}
	fmt.Fprintln(w, "usage: kafka COMMAND [flags] [args]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-26s %s\n", n, commands[n].Summary)
	}
	fmt.Fprintln(w, "\n`kafka help COMMAND` shows a command's flags.")
	return 0
}

// startCPUProfile writes a CPU profile to path until the returned stop is
// called; with an empty path it does nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile %s: %w", path, err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// brokerList accepts 0.7's "id:host:port,..." and also plain
// "host:port,..." (the later tools' form), numbering those from 0.
func brokerList(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if strings.Count(p, ":") == 1 {
			p = fmt.Sprintf("%d:%s", i, p)
		}
		parts[i] = p
	}
	return strings.Join(parts, ",")
}
