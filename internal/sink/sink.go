// Package sink runs a process that accepts TCP connections on 127.0.0.1
// and discards whatever they send: the other end of a client whose own
// cost is being measured (kafka/internal/hotpath's producer paths, counted
// by experiments/perfcheck). It runs apart from the client so that neither
// its reads nor its scheduling count in the client's time, allocations or
// instructions.
//
// The sink is any binary that calls ServeIfAsked first thing (in an init
// function): started with ServeEnv=1 in its environment, it prints its
// address on one line of standard output, serves until its standard input
// closes (its parent is done or gone) and exits. Start does that and reads
// the address. An instruction counter such as valgrind follows only the
// process it started, so it cannot count a client that forks its own sink:
// the counter starts the sink natively and names it to the client in
// AddrEnv.
package sink

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
)

// The environment of the protocol. The names are part of it: a perf-check
// starts the sink of an older tree's binary with them.
const (
	ServeEnv = "HOTPATH_SINK"      // "1": this process is a sink
	AddrEnv  = "HOTPATH_SINK_ADDR" // the address of a sink already running
)

// ServeIfAsked makes this process a sink, and exits it, if ServeEnv=1 is
// in its environment; otherwise it returns at once.
func ServeIfAsked() {
	if os.Getenv(ServeEnv) != "1" {
		return
	}
	if err := serve(); err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serve prints the listener's address, discards what every connection
// sends, and returns when standard input closes.
func serve() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr())
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(io.Discard, c)
		}
	}()
	_, err = io.Copy(io.Discard, os.Stdin)
	return err
}

// Process is a running sink.
type Process struct {
	Addr  string // host:port it listens on
	cmd   *exec.Cmd
	stdin io.Closer
}

// Start runs bin (a binary that calls ServeIfAsked) as a sink and returns
// once it has said its address.
func Start(ctx context.Context, bin string) (*Process, error) {
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), ServeEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("sink: start %s: %w", bin, err)
	}
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stdin.Close()
		cmd.Wait()
		return nil, fmt.Errorf("sink: %s printed no address: %w", bin, err)
	}
	return &Process{Addr: strings.TrimSpace(addr), cmd: cmd, stdin: stdin}, nil
}

// Stop closes the sink's standard input and waits for it to exit. A nil
// Process (a sink someone else runs) has nothing to stop.
func (p *Process) Stop() error {
	if p == nil {
		return nil
	}
	p.stdin.Close()
	return p.cmd.Wait()
}
