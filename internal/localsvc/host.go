package localsvc

import (
	"context"
	"os"
	"os/exec"
)

// DefaultAddr is where servers listen when nothing else is asked: this
// machine's loopback.
const DefaultAddr = "127.0.0.1"

// Host is the machine a server runs on, as its clients see it: the address
// it listens on (and clients dial), how to run a program there, and how to
// find a free port there. The zero Host is this machine over loopback. The
// two-host set-up of the experiments (package experiments/link) makes a
// Host of a network namespace: Exec is "ip netns exec <namespace>", which
// switches namespace and execs the program in place (same process id), and
// Addr is the namespace's end of the link.
type Host struct {
	Addr string // the address servers listen on; "" means DefaultAddr
	// Exec is the command prefix that runs a program on the host; nil runs
	// it here.
	Exec []string
	// FreePort finds a free TCP port on the host; nil uses FreePort.
	FreePort func() (int, error)
}

// Address is the address servers on h listen on.
func (h Host) Address() string {
	if h.Addr == "" {
		return DefaultAddr
	}
	return h.Addr
}

// Port is a free TCP port on h.
func (h Host) Port() (int, error) {
	if h.FreePort != nil {
		return h.FreePort()
	}
	return FreePort()
}

// Command is exec.Command of name and args on h; a script run there finds
// the address to listen on in LISTEN_ADDR (scripts/lib.sh).
func (h Host) Command(name string, args ...string) *exec.Cmd {
	argv := h.argv(name, args)
	return h.setup(exec.Command(argv[0], argv[1:]...))
}

// CommandContext is exec.CommandContext of name and args on h.
func (h Host) CommandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	argv := h.argv(name, args)
	return h.setup(exec.CommandContext(ctx, argv[0], argv[1:]...))
}

func (h Host) argv(name string, args []string) []string {
	return append(append(append([]string{}, h.Exec...), name), args...)
}

func (h Host) setup(cmd *exec.Cmd) *exec.Cmd {
	cmd.Env = append(os.Environ(), "LISTEN_ADDR="+h.Address())
	return cmd
}
