// Package faultnet gives replication's network fault tests (kafka/faults_netns_test.go) a cluster of
// separate hosts on this machine: one Linux network namespace per host (ZooKeeper, each broker, the
// clients), each joined by a veth pair to one bridge that lives in a namespace of its own, and the two
// faults a network makes: a host cut off from some others (iptables inside its namespace) and a slow link
// (tc on the bridge's port toward a host).
//
//	krft-<id>-zk      krft-<id>-b0      krft-<id>-b1      krft-<id>-b2      krft-<id>-cli
//	10.202.0.10       10.202.0.20       10.202.0.21       10.202.0.22       10.202.0.30
//	ZooKeeper         broker 0          broker 1          broker 2          the test: producers,
//	    │                 │                 │                 │             consumers, checker
//	    └──── veth ───────┴────── veth ─────┴────── veth ─────┴──── veth ───────┘
//	                bridge krftbr in namespace krft-<id>-br (no address of its own)
//
// The addresses are a /24 of 10.0.0.0/8 that exists only inside these namespaces: none of them has a
// default route or any other interface, so nothing they send can leave them, and the machine's own
// network (and the namespaces of experiments/link, krnet-*) is never touched.
//
// Cut(h, others...) adds DROP rules for the others' addresses to the INPUT and OUTPUT chains of h's
// namespace (both directions; packets are dropped, not refused, so open connections stall as over a
// broken link) and Heal flushes them. Slow(h, from, rate) puts an htb qdisc on the bridge's port toward h
// with one class of that rate, into which a u32 filter sends the packets whose source is from; the rest
// of h's traffic (ZooKeeper's, say) passes at full speed. Unslow removes the qdisc. This kernel has htb,
// tbf and u32 but neither netem nor prio, so a delay is made by a rate, not by netem.
//
// Create makes all of it and Close removes all of it: every process still inside one of the namespaces
// is stopped (SIGTERM, then SIGKILL), then the namespaces are deleted (their veth ends and qdiscs go with
// them). A run holds /run/krft/<id>.lock as long as its namespaces live; namespaces of ours whose lock
// nobody holds were left by a run that crashed, and Create (through CleanStale) removes them first.
//
// A test runs its clients inside the clients' namespace by running itself there again: Exec is the
// command prefix (ip netns exec <namespace>), Encode describes the hosts to the child and Decode reads
// the description back.
package faultnet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/netns"
)

// Prefix starts every namespace and lock this package makes (never experiments/link's krnet-).
const Prefix = "krft-"

// Where iproute2 keeps named namespaces, and where our runs keep their locks.
const (
	lockDir = "/run/krft"
	subnet  = "10.202.0."
	maskLen = "/24"
)

// Host is one machine of the set-up: its name ("zk", "b0", "cli"), its namespace, its address, and the
// bridge's port toward it (in the bridge's namespace).
type Host struct {
	Name  string `json:"name"`
	Netns string `json:"netns"`
	Addr  string `json:"addr"`
	Iface string `json:"iface"` // its end of the veth pair, inside Netns
	Port  string `json:"port"`  // the other end, a port of the bridge
}

// Exec is the command prefix that runs a program on h: ip netns exec <namespace>. ip switches namespace
// and execs the program in place, so the process id a caller starts is the program's.
func (h Host) Exec() []string { return []string{"ip", "netns", "exec", h.Netns} }

// Net is the hosts of one run and the bridge joining them. A Net from Create owns the namespaces and
// removes them in Close; one from Decode (the child told where it runs) does not.
type Net struct {
	ID     string `json:"id"`
	Bridge string `json:"bridge"` // the bridge's namespace
	Hosts  []Host `json:"hosts"`

	lock *os.File
	log  *slog.Logger
}

var (
	validID   = regexp.MustCompile(`^[0-9a-z]{1,7}$`)
	validName = regexp.MustCompile(`^[0-9a-z]{1,6}$`)
)

// Check reports what this machine lacks: root, and the ip, tc, iptables and iptables-restore commands.
func Check() error {
	var errs []error
	if uid := os.Geteuid(); uid != 0 {
		errs = append(errs, fmt.Errorf("%w: running as uid %d; network namespaces, veth pairs, qdiscs and iptables rules need CAP_NET_ADMIN and CAP_SYS_ADMIN", ErrNeedsRoot, uid))
	}
	var missing []string
	for _, tool := range []string{"ip", "tc", "iptables", "iptables-restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("%w: %s not found in PATH=%s (Debian packages iproute2 and iptables)",
			ErrMissingTool, strings.Join(missing, " and "), os.Getenv("PATH")))
	}
	return errors.Join(errs...)
}

// Create checks the machine, removes what crashed runs left (CleanStale), and makes the bridge and one
// host per name (1 to 6 lower-case letters and digits, at most 200), addressed in order from 10.202.0.10
// on unless lastByte gives a host's last byte; then it checks that a TCP connection from every host reaches
// the first. id names the run (1 to 7 lower-case letters and digits; "" is the process id). On failure it
// removes what it made.
func Create(ctx context.Context, id string, names []string, lastByte map[string]int, log *slog.Logger) (*Net, error) {
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "kafka/internal/faultnet")
	if id == "" {
		id = strconv.Itoa(os.Getpid())
	}
	if !validID.MatchString(id) {
		return nil, fmt.Errorf("%w: run id %q: want 1 to 7 lower-case letters and digits", ErrSetup, id)
	}
	if len(names) == 0 || len(names) > 200 {
		return nil, fmt.Errorf("%w: %d hosts: want 1 to 200", ErrSetup, len(names))
	}
	if err := Check(); err != nil {
		return nil, err
	}
	if _, err := CleanStale(ctx, log); err != nil {
		return nil, err
	}
	lock, err := runs.Lock(id, true)
	if err != nil {
		return nil, err
	}
	n := &Net{ID: id, Bridge: Prefix + id + "-br", lock: lock, log: log}
	used := map[int]string{}
	for k, name := range names {
		if !validName.MatchString(name) || name == "br" || n.host(name) != nil {
			return nil, errors.Join(fmt.Errorf("%w: host name %q: want 1 to 6 lower-case letters and digits, unique, not br", ErrSetup, name), n.Close())
		}
		b := 10 + k
		if v, ok := lastByte[name]; ok {
			b = v
		}
		if b < 1 || b > 254 || used[b] != "" {
			return nil, errors.Join(fmt.Errorf("%w: host %s: address %s%d taken or out of range", ErrSetup, name, subnet, b), n.Close())
		}
		used[b] = name
		n.Hosts = append(n.Hosts, Host{Name: name, Netns: Prefix + id + "-" + name, Addr: subnet + strconv.Itoa(b),
			Iface: "krft" + id + "h", Port: "krft" + id + "p" + strconv.Itoa(k)})
	}
	if err := n.setUp(ctx); err != nil {
		return nil, errors.Join(err, n.Close())
	}
	log.Info("hosts up", "bridge", n.Bridge, "hosts", len(n.Hosts))
	return n, nil
}

func (n *Net) setUp(ctx context.Context) error {
	steps := [][]string{
		{"ip", "netns", "add", n.Bridge},
		{"ip", "-n", n.Bridge, "link", "add", "krftbr", "type", "bridge"},
		{"ip", "-n", n.Bridge, "link", "set", "krftbr", "up"},
	}
	for _, h := range n.Hosts {
		steps = append(steps,
			[]string{"ip", "netns", "add", h.Netns},
			[]string{"ip", "link", "add", h.Iface, "netns", h.Netns, "type", "veth", "peer", "name", h.Port, "netns", n.Bridge},
			[]string{"ip", "-n", n.Bridge, "link", "set", h.Port, "master", "krftbr"},
			[]string{"ip", "-n", n.Bridge, "link", "set", h.Port, "up"},
			[]string{"ip", "-n", h.Netns, "addr", "add", h.Addr + maskLen, "dev", h.Iface},
			[]string{"ip", "-n", h.Netns, "link", "set", "lo", "up"},
			[]string{"ip", "-n", h.Netns, "link", "set", h.Iface, "up"})
	}
	for _, st := range steps {
		if _, err := netns.Run(ctx, st...); err != nil {
			return fmt.Errorf("%w: %w", ErrSetup, err)
		}
	}
	return n.probe()
}

// probe checks every path to the first host: a listener there, a connection from each other host, one
// byte each way. A bridge port takes a moment to forward after it comes up, so each connection is tried
// for up to 10 s.
func (n *Net) probe() error {
	first := n.Hosts[0]
	var ln net.Listener
	if err := netns.InNetns(first.Netns, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(first.Addr, "0"))
		return err
	}); err != nil {
		return fmt.Errorf("%w: listen on %s: %w", ErrSetup, first.Name, err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, io.LimitReader(c, 1)); c.Close() }()
		}
	}()
	for _, h := range n.Hosts[1:] {
		err := netns.InNetns(h.Netns, func() error {
			var last error
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if last = echo(ln.Addr().String()); last == nil {
					return nil
				}
			}
			return last
		})
		if err != nil {
			return fmt.Errorf("%w: %s (%s) cannot reach %s at %s: %w", ErrSetup, h.Name, h.Addr, first.Name, ln.Addr(), err)
		}
	}
	return nil
}

func echo(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	b := []byte{42}
	if _, err := c.Write(b); err != nil {
		return err
	}
	_, err = io.ReadFull(c, b)
	return err
}

func (n *Net) host(name string) *Host {
	for i := range n.Hosts {
		if n.Hosts[i].Name == name {
			return &n.Hosts[i]
		}
	}
	return nil
}

// Host returns the host of that name.
func (n *Net) Host(name string) (Host, error) {
	if h := n.host(name); h != nil {
		return *h, nil
	}
	return Host{}, fmt.Errorf("%w: %q (hosts of run %s: %v)", ErrUnknownHost, name, n.ID, n.names())
}

func (n *Net) names() []string {
	var out []string
	for _, h := range n.Hosts {
		out = append(out, h.Name)
	}
	return out
}

// Cut drops, inside h's namespace, every packet to or from the others' addresses, both ways (iptables
// INPUT and OUTPUT). The rules go in as one iptables-restore transaction, so the cut is whole at once.
// Heal removes every such rule of h.
func (n *Net) Cut(ctx context.Context, h Host, others ...Host) error {
	var rules strings.Builder
	rules.WriteString("*filter\n")
	var names []string
	for _, o := range others {
		fmt.Fprintf(&rules, "-A INPUT -s %s/32 -j DROP\n-A OUTPUT -d %s/32 -j DROP\n", o.Addr, o.Addr)
		names = append(names, o.Name)
	}
	rules.WriteString("COMMIT\n")
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", h.Netns, "iptables-restore", "-w", "--noflush")
	cmd.Stdin = strings.NewReader(rules.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("faultnet: cut %s from %v: iptables-restore in %s: %v: %s", h.Name, names, h.Netns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Heal removes the rules Cut added to h.
func (n *Net) Heal(ctx context.Context, h Host) error {
	for _, chain := range []string{"INPUT", "OUTPUT"} {
		if _, err := netns.Run(ctx, "ip", "netns", "exec", h.Netns, "iptables", "-w", "-F", chain); err != nil {
			return fmt.Errorf("faultnet: heal %s: %w", h.Name, err)
		}
	}
	return nil
}

// Rules lists h's iptables rules (iptables -S), for the test log.
func (n *Net) Rules(ctx context.Context, h Host) (string, error) {
	out, err := netns.Run(ctx, "ip", "netns", "exec", h.Netns, "iptables", "-w", "-S")
	return strings.TrimSpace(string(out)), err
}

// Slow limits what from sends to h to rate (tc's units: "1mbit"). On the bridge's port toward h: an htb
// qdisc whose default class passes everything at 10 Gbit/s, a second class for the packets whose source
// is from's address (a u32 filter), and under that class a tbf of rate with a 4 KiB bucket and at most
// 50 ms of queue. tbf, unlike htb, splits a large segmentation-offload packet into wire-sized ones, so
// the queue stays short and TCP adapts to the rate instead of queueing megabytes. Unslow removes it.
func (n *Net) Slow(ctx context.Context, h, from Host, rate string) error {
	tc := func(args ...string) []string { return append([]string{"tc", "-n", n.Bridge}, args...) }
	steps := [][]string{
		tc("qdisc", "add", "dev", h.Port, "root", "handle", "1:", "htb", "default", "10", "r2q", "100000"),
		tc("class", "add", "dev", h.Port, "parent", "1:", "classid", "1:10", "htb", "rate", "10gbit"),
		tc("class", "add", "dev", h.Port, "parent", "1:", "classid", "1:20", "htb", "rate", "10gbit"),
		tc("qdisc", "add", "dev", h.Port, "parent", "1:20", "handle", "20:", "tbf", "rate", rate, "burst", "4096", "latency", "50ms"),
		tc("filter", "add", "dev", h.Port, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
			"match", "ip", "src", from.Addr+"/32", "flowid", "1:20"),
	}
	for _, st := range steps {
		if _, err := netns.Run(ctx, st...); err != nil {
			return fmt.Errorf("faultnet: slow %s→%s to %s: %w", from.Name, h.Name, rate, errors.Join(err, n.Unslow(ctx, h)))
		}
	}
	return nil
}

// Unslow removes the qdisc Slow put on the bridge's port toward h (nothing if there is none).
func (n *Net) Unslow(ctx context.Context, h Host) error {
	out, err := netns.Run(ctx, "tc", "-n", n.Bridge, "qdisc", "show", "dev", h.Port, "root")
	if err != nil {
		return fmt.Errorf("faultnet: unslow %s: %w", h.Name, err)
	}
	if !bytes.Contains(out, []byte("htb")) {
		return nil
	}
	if _, err := netns.Run(ctx, "tc", "-n", n.Bridge, "qdisc", "del", "dev", h.Port, "root"); err != nil {
		return fmt.Errorf("faultnet: unslow %s: %w", h.Name, err)
	}
	return nil
}

// Qdisc is tc -s qdisc show of the bridge's port toward h (what was sent, dropped and queued), for the
// test log.
func (n *Net) Qdisc(ctx context.Context, h Host) string {
	q, _ := netns.Run(ctx, "tc", "-s", "-n", n.Bridge, "qdisc", "show", "dev", h.Port)
	return strings.TrimSpace(string(q))
}

// Encode describes the hosts for a child process (see Decode).
func (n *Net) Encode() string {
	b, _ := json.Marshal(n)
	return string(b)
}

// Decode reads Encode's description. The Net it returns does not own the namespaces (Close refuses).
func Decode(s string) (*Net, error) {
	var n Net
	if err := json.Unmarshal([]byte(s), &n); err != nil {
		return nil, fmt.Errorf("faultnet: decode %q: %w", s, err)
	}
	if !validID.MatchString(n.ID) || len(n.Hosts) == 0 || !strings.HasPrefix(n.Bridge, Prefix) {
		return nil, fmt.Errorf("faultnet: decode %q: not a description of hosts", s)
	}
	return &n, nil
}

// Close stops every process left in the run's namespaces and deletes them, then releases the run's lock.
// It is safe to call twice; a Net from Decode refuses.
func (n *Net) Close() error {
	if n.lock == nil {
		return fmt.Errorf("faultnet: %s: only the process that created the hosts removes them", n.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := teardown(ctx, n.ID, n.log)
	runs.Release(n.lock, err == nil)
	n.lock = nil
	return err
}

// runs is this package's family of namespace runs (krft-<id>-<host>, locked in /run/krft): how a run is
// locked, found after a crash, emptied of processes and removed is internal/netns's Runs.
var runs = netns.Runs{Prefix: Prefix, LockDir: lockDir, Teardown: teardown, Err: ErrSetup}

// CleanStale removes the namespaces of earlier runs whose lock nobody holds any more (their process died
// without cleaning up), stopping the processes left in them, and returns the namespaces it removed. Runs
// still alive are left alone.
func CleanStale(ctx context.Context, log *slog.Logger) ([]string, error) {
	if log == nil {
		log = slog.Default().With("component", "kafka/internal/faultnet")
	}
	return runs.CleanStale(ctx, log)
}

// namespaces lists the namespaces of run id that exist, the bridge's last.
func namespaces(id string) []string {
	all := netns.Namespaces(Prefix + id + "-")
	br := Prefix + id + "-br"
	out := slices.DeleteFunc(slices.Clone(all), func(ns string) bool { return ns == br })
	if len(out) < len(all) {
		out = append(out, br)
	}
	return out
}

// teardown stops the processes in every namespace of run id (SIGTERM, then SIGKILL after 10 s) and
// deletes the namespaces (the veth pairs and qdiscs go with them).
func teardown(ctx context.Context, id string, log *slog.Logger) error {
	nss := namespaces(id)
	var errs []error
	for _, ns := range nss {
		errs = append(errs, netns.KillAll(ctx, ns, log))
	}
	for _, ns := range nss {
		if _, err := netns.Run(ctx, "ip", "netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
