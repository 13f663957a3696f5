package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/kafkarepro/kafkarepro/compare/local"
	"github.com/kafkarepro/kafkarepro/experiments"
	"github.com/kafkarepro/kafkarepro/experiments/link"
	"github.com/kafkarepro/kafkarepro/internal/kafkaproc"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
)

// --network 1gbit (make reproduce NETWORK=1gbit) runs the experiments as
// the paper did, with the servers on one host and the clients on another
// (package experiments/link): this process, the parent, checks the
// machine, installs the servers' packages while it can still reach a
// package mirror, builds our broker, makes the link, and runs itself again
// as the child inside the client host's namespace; the child starts every
// server on the server host (ip netns exec, listening on that host's
// address) and runs the experiments from the client host. When the child
// ends, however it ends, the parent removes the link and the servers'
// folder. A SIGINT or SIGTERM to the parent is passed to the child, which
// stops its servers and writes what it measured; a second one kills it.

// Environment of the child: the link, and the servers' folder (made and
// removed by the parent).
const (
	linkEnv = "REPRODUCE_LINK"
	rootEnv = "REPRODUCE_LINK_ROOT"
)

// childWait bounds the wait for the child after a signal: its servers'
// stops take up to 30 s each (kafkaproc.StopTimeout, the scripts' stop).
const childWait = 3 * time.Minute

// loadBeside reads the run to set beside this one ("" : none).
func loadBeside(dir string) (*experiments.Beside, error) {
	if dir == "" {
		return nil, nil
	}
	s, err := experiments.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("--beside: %w", err)
	}
	return experiments.BesideOf(s), nil
}

// inChild returns the link the child runs over, nil in every other process.
func inChild() (*link.Link, string, error) {
	enc := os.Getenv(linkEnv)
	if enc == "" {
		return nil, "", nil
	}
	l, err := link.Decode(enc)
	return l, os.Getenv(rootEnv), err
}

// serverHost is where the child starts servers: the server namespace, on
// its end of the link, with free ports asked of that namespace's kernel.
func serverHost(l *link.Link) localsvc.Host {
	return localsvc.Host{Addr: l.Server.Addr, Exec: l.Server.Exec(),
		FreePort: func() (int, error) { return link.FreePort(l.Server.Netns, l.Server.Addr) }}
}

// overLink is the parent's side of a run over a link; it returns the exit
// code. Every check that can fail (the machine, the rate, the packages, the
// build) is made before any server starts, the link first.
func overLink(ctx context.Context, o options, args []string, stdout, stderr io.Writer, logger *slog.Logger) int {
	fail := func(err error) int {
		fmt.Fprintln(stderr, "reproduce:", err)
		return 1
	}
	if err := link.Check(); err != nil {
		return fail(fmt.Errorf("NETWORK=%s: %w", o.network.Name, err))
	}
	self, err := os.Executable()
	if err != nil {
		return fail(fmt.Errorf("NETWORK=%s: cannot find this program to run it on the client host: %w", o.network.Name, err))
	}
	repo, err := local.FindRepo()
	if err != nil {
		return fail(err)
	}
	l, err := link.Create(ctx, o.network, link.Options{Log: logger})
	if err != nil {
		return fail(err)
	}
	failLink := func(err error) int {
		if cerr := l.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("removing the link: %w", cerr))
		}
		return fail(err)
	}
	// The server host has no route to a package mirror: install now (our
	// broker's runs need ZooKeeper for figure 6).
	for _, sys := range o.systems {
		if sys == "kafka" {
			sys = "zookeeper"
		}
		cmd := exec.CommandContext(ctx, "bash", filepath.Join(repo, "scripts", sys+".sh"), "install")
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Run(); err != nil {
			return failLink(fmt.Errorf("installing %s before the run: %w", sys, err))
		}
	}
	root, err := os.MkdirTemp("", "kafkarepro-local-")
	if err != nil {
		return failLink(err)
	}
	defer func() {
		if !o.keep {
			_ = os.RemoveAll(root)
		}
	}()
	// Built here, where the module proxy answers; the child's build of the
	// same tree then finds everything in the build cache.
	if err := kafkaproc.Build(ctx, repo, filepath.Join(root, "bin", "kafka")); err != nil {
		return failLink(err)
	}
	if o.protocols > 0 {
		if err := buildProtocolSpeed(ctx, repo, filepath.Join(root, "bin", "protocolspeed")); err != nil {
			return failLink(err)
		}
	}
	code := runChild(ctx, l, self, args, root, stdout, stderr)
	if err := l.Close(); err != nil {
		fmt.Fprintln(stderr, "reproduce: removing the link:", err)
		code = max(code, 1)
	}
	return code
}

// runChild runs this program again on the client host and waits for it.
func runChild(ctx context.Context, l *link.Link, self string, args []string, root string, stdout, stderr io.Writer) int {
	// The child gets SIGTERM if this process dies without cleaning up
	// (Pdeathsig follows the thread that started it: keep that thread).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "reproduce: interrupted before the run began")
		return 1
	}
	cmd := exec.Command("ip", append(l.Client.Exec()[1:], append([]string{self}, args...)...)...)
	cmd.Env = append(os.Environ(), linkEnv+"="+l.Encode(), rootEnv+"="+root)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "reproduce: starting the run on the client host:", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var deadline <-chan time.Time
	for {
		select {
		case err := <-done:
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				if exit.ExitCode() < 0 {
					fmt.Fprintf(stderr, "reproduce: the run on the client host ended by %v\n", exit.ProcessState)
					return 1
				}
				return exit.ExitCode()
			}
			if err != nil {
				fmt.Fprintln(stderr, "reproduce: the run on the client host:", err)
				return 1
			}
			return 0
		case sig := <-sigs:
			if deadline != nil {
				fmt.Fprintln(stderr, "reproduce: second signal: killing the run; the link and every server on it are removed next")
				_ = cmd.Process.Kill()
				continue
			}
			fmt.Fprintf(stderr, "reproduce: %v: stopping the run (it stops its servers and writes what it measured)\n", sig)
			_ = cmd.Process.Signal(sig)
			deadline = time.After(childWait)
		case <-deadline:
			fmt.Fprintf(stderr, "reproduce: the run did not stop within %v of the signal: killing it\n", childWait)
			_ = cmd.Process.Kill()
			deadline = nil
		}
	}
}
