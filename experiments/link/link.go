// Package link gives the §5 experiments the paper's two machines on one
// machine: a server host and a client host, each a Linux network namespace,
// joined by a veth pair whose two ends are shaped to one rate with tc's
// token-bucket filter (tbf), both directions. §5: "We ran our experiments on 2
// Linux machines ... The two machines are connected with a 1Gb network link."
//
//	 server host (netns krnet-<id>-srv)        client host (netns krnet-<id>-cli)
//	┌──────────────────────────────────┐      ┌──────────────────────────────────┐
//	│ ZooKeeper, our broker, ActiveMQ, │      │ the harness: producer and        │
//	│ RabbitMQ listen on 10.201.12.1   │      │ consumer clients, 10.201.12.2    │
//	│ lo up (RabbitMQ's epmd and       │      │                                  │
//	│ distribution stay on 127.0.0.1)  │      │                                  │
//	│           krnet-<id>s ───────────┼─veth─┼─────────── krnet-<id>c           │
//	│        tc tbf rate R             │      │        tc tbf rate R             │
//	└──────────────────────────────────┘      └──────────────────────────────────┘
//
// The addresses are a /30 of 10.0.0.0/8 that exists only inside the two
// namespaces: neither has a default route or any other interface, so
// nothing they send can leave them. netem (delay, loss) is not used: this
// kernel has tbf but not netem.
//
// Create makes all of it and Close removes all of it: it stops every
// process still inside either namespace, deletes the veth pair (and its
// qdiscs with it) and both namespaces. A run holds a lock file,
// /run/krnet/<id>.lock, for as long as its namespaces live; a namespace of
// ours whose lock nobody holds was left by a run that crashed, and Create
// (through CleanStale) removes it first instead of tripping over it.
//
// Everything needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2's ip
// and tc; Check says which is missing. Capacity turns the rate into the
// messages per second the link can carry, counting every byte tbf counts.
package link

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Prefix starts the name of every namespace, interface and lock file this
// package makes, so that they never collide with anyone else's.
const Prefix = "krnet-"

// The two hosts' addresses: a /30 used only inside our namespaces.
const (
	ServerAddr = "10.201.12.1"
	ClientAddr = "10.201.12.2"
	prefixLen  = 30
)

// Loopback is the Network value that runs clients and servers on this
// machine's loopback, as the harness always did.
const Loopback = "loopback"

// Spec is a parsed NETWORK value: loopback, or a link of BitsPerSec.
type Spec struct {
	Name       string // as the user wrote it: "loopback", "1gbit", "10gbit"
	BitsPerSec int64  // 0 for loopback
}

// IsLoopback reports whether the spec is the loopback set-up (no link).
func (s Spec) IsLoopback() bool { return s.BitsPerSec == 0 }

// TC is the rate as tc reads it: whole bits per second, "1000000000bit".
func (s Spec) TC() string { return strconv.FormatInt(s.BitsPerSec, 10) + "bit" }

// String is the rate for people: "1 Gb/s", "2.5 Gb/s", "100 Mb/s".
func (s Spec) String() string {
	if s.IsLoopback() {
		return Loopback
	}
	return FormatRate(float64(s.BitsPerSec))
}

// FormatRate writes bits per second with an SI prefix: 1e9 is "1 Gb/s".
func FormatRate(bits float64) string {
	for _, u := range []struct {
		div  float64
		name string
	}{{1e12, "Tb/s"}, {1e9, "Gb/s"}, {1e6, "Mb/s"}, {1e3, "kb/s"}} {
		if bits >= u.div {
			return strconv.FormatFloat(bits/u.div, 'f', -1, 64) + " " + u.name
		}
	}
	return strconv.FormatFloat(bits, 'f', -1, 64) + " b/s"
}

// units are the rate units Parse accepts: tc's decimal bit units (tc reads
// "gbit" as 10^9 bit/s and "gibit" as 2^30).
var units = []struct {
	suffix string
	mult   float64
}{
	{"kibit", 1 << 10}, {"mibit", 1 << 20}, {"gibit", 1 << 30}, {"tibit", 1 << 40},
	{"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"tbit", 1e12}, {"bit", 1},
}

// Parse reads a NETWORK value: "" or "loopback", or a rate in tc's bit
// units, a number and one of bit, kbit, mbit, gbit, tbit (or kibit ...
// tibit), any case: "1gbit" (the paper's link), "10gbit", "2.5gbit",
// "100mbit". tc spells bytes per second "bps", so "1gbps" would be eight
// times the rate meant; Parse refuses every "bps" unit and says so. Parse
// does not decide which rates tc can shape: Create asks tc, and reads the
// qdisc back.
func Parse(s string) (Spec, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "" || v == Loopback {
		return Spec{Name: Loopback}, nil
	}
	if strings.HasSuffix(v, "bps") {
		return Spec{}, fmt.Errorf("%w %q: tc reads \"bps\" as bytes per second; write the rate in bits, e.g. 1gbit", ErrUnknownNetwork, s)
	}
	for _, u := range units {
		num, ok := strings.CutSuffix(v, u.suffix)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || num == "" || strings.ContainsAny(num, "+-eEnNiI") {
			break
		}
		bits := f * u.mult
		if bits < 1 || bits >= math.MaxInt64 || bits != math.Trunc(bits) {
			return Spec{}, fmt.Errorf("%w %q: the rate must be a whole number of bits per second, at least 1", ErrUnknownNetwork, s)
		}
		return Spec{Name: strings.TrimSpace(s), BitsPerSec: int64(bits)}, nil
	}
	return Spec{}, fmt.Errorf("%w %q: want loopback, or a rate such as 1gbit, 10gbit or 100mbit", ErrUnknownNetwork, s)
}
