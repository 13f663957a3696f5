package main

import (
	"fmt"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

func init() {
	register(&command{
		Name:    "brokers",
		Args:    "--zookeeper HOST:PORT[/chroot] [--wait N]",
		Summary: "list the live brokers of the ZooKeeper registry (/brokers/ids)",
		Run:     brokersCmd,
	})
}

// brokersCmd prints one line per live broker: id, address and the creator string it registered (paper §3.2:
// the broker registry). --wait N first waits up to a minute for N brokers, which lets a script start brokers in
// the background and go on once they are all up.
func brokersCmd(args []string, std stdio) error {
	fs := newFlags(commands["brokers"], std.Err)
	zkConnect := fs.String("zookeeper", "", "ZooKeeper connect string host:port[,host:port][/chroot]")
	wait := fs.Int("wait", 0, "wait (up to a minute) until at least this many brokers are registered")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "zookeeper"); err != nil {
		return err
	}
	c, err := zk.Connect(*zkConnect, 6*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	var brokers map[int]zk.Broker
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if brokers, err = zk.LiveBrokers(c, nil); err != nil {
			return err
		}
		if len(brokers) >= *wait {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d brokers registered after a minute, waited for %d", len(brokers), *wait)
		}
	}
	tw := tabwriter.NewWriter(std.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tADDRESS\tCREATOR")
	for _, id := range slices.Sorted(maps.Keys(brokers)) {
		b := brokers[id]
		fmt.Fprintf(tw, "%d\t%s\t%s\n", id, b.Addr(), b.Creator)
	}
	return tw.Flush()
}
