package link

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kafkarepro/kafkarepro/internal/netns"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Where iproute2 keeps named namespaces, and where our runs keep their locks.
const (
	lockDir = "/run/krnet"
)

// End is one host of a link: its namespace, its end of the veth pair and
// that end's address.
type End struct {
	Netns string `json:"netns"`
	Iface string `json:"iface"`
	Addr  string `json:"addr"`
}

// Link is a server host and a client host joined by a shaped veth pair. A
// Link from Create owns the namespaces and removes them in Close; one from
// Decode (a child process told where it runs) does not.
type Link struct {
	Spec   Spec   `json:"spec"`
	ID     string `json:"id"`
	Server End    `json:"server"`
	Client End    `json:"client"`
	// Framing is what TCP/IP adds on this link (the veth's MTU, and whether
	// both hosts use TCP timestamps), read from the namespaces.
	Framing Framing `json:"framing"`
	// BurstBytes is tbf's bucket on each end (see burstFor).
	BurstBytes int64 `json:"burst_bytes"`

	lock   *os.File
	log    *slog.Logger
	shaped []int64 // the buckets tc set on each end
}

// Options configure Create.
type Options struct {
	// ID names the run in every name we make (krnet-<ID>-srv ...): 1 to 8
	// lower-case letters and digits. "" uses the process id.
	ID  string
	Log *slog.Logger // gets component=experiments/link; nil: slog.Default()
}

var validID = regexp.MustCompile(`^[0-9a-z]{1,8}$`)

// Names returns the namespace and interface names of run id.
func Names(id string) (server, client End) {
	return End{Netns: Prefix + id + "-srv", Iface: Prefix + id + "s", Addr: ServerAddr},
		End{Netns: Prefix + id + "-cli", Iface: Prefix + id + "c", Addr: ClientAddr}
}

// Check reports what this machine lacks for a shaped link: root, and the
// ip and tc commands (Debian package iproute2). It starts nothing.
func Check() error { return check(os.Geteuid()) }

func check(uid int) error {
	var errs []error
	if uid != 0 {
		errs = append(errs, fmt.Errorf("%w: running as uid %d; run as root (sudo make ...): network namespaces, veth pairs and tc qdiscs need CAP_NET_ADMIN and CAP_SYS_ADMIN", ErrNeedsRoot, uid))
	}
	var missing []string
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("%w: %s not found in PATH=%s (Debian package iproute2: apt-get install iproute2)",
			ErrMissingTool, strings.Join(missing, " and "), os.Getenv("PATH")))
	}
	return errors.Join(errs...)
}

// Create checks the machine, removes what crashed runs left behind
// (CleanStale), and makes the two namespaces, the veth pair between them
// with its addresses, and a tbf qdisc of spec's rate on each end; then it
// checks that a TCP connection from the client host reaches the server
// host. On any failure it removes what it made and the error says which
// step failed with what input.
func Create(ctx context.Context, spec Spec, o Options) (*Link, error) {
	if spec.IsLoopback() {
		return nil, fmt.Errorf("%w: %q is loopback, not a link", ErrUnknownNetwork, spec.Name)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	log := o.Log.With("component", "experiments/link")
	if o.ID == "" {
		o.ID = strconv.Itoa(os.Getpid())
	}
	if !validID.MatchString(o.ID) {
		return nil, fmt.Errorf("%w: run id %q: want 1 to 8 lower-case letters and digits", ErrSetup, o.ID)
	}
	if err := Check(); err != nil {
		return nil, err
	}
	if _, err := CleanStale(ctx, log); err != nil {
		return nil, err
	}
	lock, err := runs.Lock(o.ID, true)
	if err != nil {
		return nil, err
	}
	l := &Link{Spec: spec, ID: o.ID, BurstBytes: burstFor(spec.BitsPerSec), lock: lock, log: log}
	l.Server, l.Client = Names(o.ID)
	if err := l.setUp(ctx); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	log.Info("link up", "rate", spec.String(), "server", l.Server, "client", l.Client, "framing", l.Framing)
	return l, nil
}

// burstFor is tbf's bucket: 1 ms at the rate, at least 128 KiB, so that a
// 64 KiB TSO packet passes whole (tbf would otherwise split it in
// software), and at most 64 MiB (tc's limit is 4 GiB). The bucket lets
// through at most that much above the rate, a negligible part of any test.
func burstFor(bits int64) int64 { return min(max(bits/8/1000, 128<<10), 64<<20) }

func (l *Link) setUp(ctx context.Context) error {
	s, c := l.Server, l.Client
	steps := [][]string{
		{"ip", "netns", "add", s.Netns},
		{"ip", "netns", "add", c.Netns},
		{"ip", "link", "add", s.Iface, "netns", s.Netns, "type", "veth", "peer", "name", c.Iface, "netns", c.Netns},
	}
	for _, e := range []End{s, c} {
		steps = append(steps,
			[]string{"ip", "-n", e.Netns, "addr", "add", e.Addr + "/" + strconv.Itoa(prefixLen), "dev", e.Iface},
			[]string{"ip", "-n", e.Netns, "link", "set", "lo", "up"},
			[]string{"ip", "-n", e.Netns, "link", "set", e.Iface, "up"})
	}
	for _, st := range steps {
		if _, err := netns.Run(ctx, st...); err != nil {
			return fmt.Errorf("%w: %w", ErrSetup, err)
		}
	}
	for _, e := range []End{s, c} {
		if err := l.shape(ctx, e); err != nil {
			return err
		}
	}
	l.BurstBytes = min(l.shaped[0], l.shaped[1])
	var err error
	if l.Framing, err = l.readFraming(ctx); err != nil {
		return err
	}
	return l.probe()
}

// shape puts a tbf qdisc of the link's rate on one end and reads it back:
// tc accepts some rates it cannot represent and stores another (10000tbit
// comes back with a bucket of 0 bytes). tc stores the bucket as the time it
// takes at the rate, so it comes back rounded (131072 bytes at 1 Gb/s as
// 131000); a bucket more than 5% off, or a different rate, is refused. The
// bucket read back is the link's BurstBytes.
func (l *Link) shape(ctx context.Context, e End) error {
	if _, err := netns.Run(ctx, "tc", "-n", e.Netns, "qdisc", "add", "dev", e.Iface, "root", "tbf",
		"rate", l.Spec.TC(), "burst", strconv.FormatInt(l.BurstBytes, 10), "latency", "20ms"); err != nil {
		return fmt.Errorf("%w: NETWORK=%s (%s): %w", ErrShaping, l.Spec.Name, l.Spec.TC(), err)
	}
	out, err := netns.Run(ctx, "tc", "-j", "-n", e.Netns, "qdisc", "show", "dev", e.Iface, "root")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrShaping, err)
	}
	var qd []struct {
		Kind    string `json:"kind"`
		Options struct {
			Rate  json.Number `json:"rate"`
			Burst json.Number `json:"burst"`
		} `json:"options"`
	}
	if err := json.Unmarshal(out, &qd); err != nil || len(qd) != 1 {
		return fmt.Errorf("%w: cannot read back the qdisc of %s in %s (%v): %s", ErrShaping, e.Iface, e.Netns, err, out)
	}
	q := qd[0]
	burst, _ := strconv.ParseInt(q.Options.Burst.String(), 10, 64)
	if q.Kind != "tbf" || q.Options.Rate.String() != strconv.FormatInt(l.Spec.BitsPerSec/8, 10) ||
		burst > l.BurstBytes || burst < l.BurstBytes*95/100 {
		return fmt.Errorf("%w: NETWORK=%s: asked tc for tbf rate %d bytes/s burst %d on %s, it set %s rate %s burst %s",
			ErrShaping, l.Spec.Name, l.Spec.BitsPerSec/8, l.BurstBytes, e.Iface, q.Kind, q.Options.Rate, q.Options.Burst)
	}
	l.shaped = append(l.shaped, burst)
	return nil
}

// readFraming reads the veth's MTU and whether both hosts use TCP
// timestamps (the option is used only when both sides offer it).
func (l *Link) readFraming(ctx context.Context) (Framing, error) {
	out, err := netns.Run(ctx, "ip", "-j", "-n", l.Client.Netns, "link", "show", "dev", l.Client.Iface)
	if err != nil {
		return Framing{}, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	var links []struct {
		MTU int `json:"mtu"`
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 || links[0].MTU <= 0 {
		return Framing{}, fmt.Errorf("%w: cannot read the MTU of %s (%v): %s", ErrSetup, l.Client.Iface, err, out)
	}
	f := Framing{MTU: links[0].MTU, Timestamps: true}
	for _, e := range []End{l.Server, l.Client} {
		out, err := netns.Run(ctx, "ip", "netns", "exec", e.Netns, "cat", "/proc/sys/net/ipv4/tcp_timestamps")
		if err != nil {
			return Framing{}, fmt.Errorf("%w: %w", ErrSetup, err)
		}
		f.Timestamps = f.Timestamps && strings.TrimSpace(string(out)) != "0"
	}
	return f, nil
}

// Close stops every process left in either namespace, deletes the veth
// pair (its qdiscs go with it) and both namespaces, and releases the run's
// lock. It is safe to call twice; a Link from Decode refuses.
func (l *Link) Close() error {
	if l.lock == nil {
		return fmt.Errorf("link: %s: only the process that created the link removes it", l.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := teardown(ctx, l.ID, l.logger())
	runs.Release(l.lock, err == nil)
	l.lock = nil
	return err
}

func (l *Link) logger() *slog.Logger {
	if l.log == nil {
		return slog.Default().With("component", "experiments/link")
	}
	return l.log
}

// runs is this package's family of runs: krnet-<id>-srv and -cli, locked in
// /run/krnet (internal/netns's Runs).
var runs = netns.Runs{Prefix: Prefix, LockDir: lockDir, Teardown: teardown, Err: ErrSetup}

// CleanStale removes the namespaces and veth pairs of earlier runs whose
// lock nobody holds any more (their process died without cleaning up) and
// returns the namespaces it removed. Runs still alive are left alone.
func CleanStale(ctx context.Context, log *slog.Logger) ([]string, error) {
	if log == nil {
		log = slog.Default().With("component", "experiments/link")
	}
	return runs.CleanStale(ctx, log)
}

func exists(ns string) bool {
	_, err := os.Stat(filepath.Join(netns.Dir, ns))
	return err == nil
}

// teardown removes everything of run id: the processes in its namespaces
// (SIGTERM, then SIGKILL after 10 s), the veth pair and the namespaces.
func teardown(ctx context.Context, id string, log *slog.Logger) error {
	s, c := Names(id)
	var errs []error
	for _, ns := range []string{s.Netns, c.Netns} {
		if exists(ns) {
			errs = append(errs, netns.KillAll(ctx, ns, log))
		}
	}
	// Deleting one end of a veth pair deletes both.
	for _, e := range []End{s, c} {
		if exists(e.Netns) {
			if out, err := netns.Run(ctx, "ip", "-n", e.Netns, "-j", "link", "show", "dev", e.Iface); err == nil && len(bytes.TrimSpace(out)) > 2 {
				if _, err := netns.Run(ctx, "ip", "-n", e.Netns, "link", "del", e.Iface); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	for _, ns := range []string{s.Netns, c.Netns} {
		if exists(ns) {
			if _, err := netns.Run(ctx, "ip", "netns", "del", ns); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
