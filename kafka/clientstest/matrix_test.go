package clientstest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
)

// The matrix: for each client, with its default settings where it
// negotiates (ApiVersions) and with the settings the README gives where it
// cannot, against one broker of ours: list metadata; produce 10,000 keyed
// messages plain, gzip and snappy; consume them from the beginning, every key
// and value intact and in order; list the earliest and latest offsets; commit
// an offset and read it back.

// messages is how many keyed messages each client produces per codec.
const messages = 10_000

var codecs = []string{"none", "gzip", "snappy"}

// record is one message as a client saw it.
type record struct {
	offset     int64
	key, value string
}

// client is what the matrix asks of each client.
type client struct {
	name string
	// produce sends msgs, keyed, to partition 0 of topic with codec ("none", "gzip", "snappy").
	produce func(t *testing.T, addr, topic, codec string, msgs []record)
	// consume reads n messages from the beginning of partition 0.
	consume func(t *testing.T, addr, topic string, n int) []record
	// offsets lists the earliest and latest offsets of partition 0.
	offsets func(t *testing.T, addr, topic string) (earliest, latest int64)
	// commit stores offset for group on partition 0 of topic and reads it back; nil if the client cannot.
	commit func(t *testing.T, addr, group, topic string, offset int64) int64
	// topics lists the topics the broker's metadata names.
	topics func(t *testing.T, addr string) []string
}

var (
	clientsMu sync.Mutex
	clients   []client
)

func register(c client) {
	clientsMu.Lock()
	clients = append(clients, c)
	clientsMu.Unlock()
}

func startBroker(t *testing.T) *brokertest.Broker {
	return brokertest.Start(t, 0, brokertest.Options{Props: map[string]string{
		"num.partitions":                "1",
		"log.flush.interval":            "10000",
		"log.default.flush.interval.ms": "20",
	}})
}

func keyed(codec string) []record {
	out := make([]record, messages)
	for i := range out {
		out[i] = record{offset: int64(i), key: fmt.Sprintf("key-%d", i), value: fmt.Sprintf("value-%d-%s-%s", i, codec, strings.Repeat("x", i%50))}
	}
	return out
}

// TestIntegration_Clients08 runs the matrix, one subtest per client and
// codec, and prints what each did.
func TestIntegration_Clients08(t *testing.T) {
	if testing.Short() {
		t.Skip("real clients: not in -short")
	}
	installClients(t)
	tb := startBroker(t)
	addr := tb.HostPort()
	var report []string
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			row := []string{c.name}
			for _, codec := range codecs {
				topic := fmt.Sprintf("%s-%s", strings.ReplaceAll(c.name, " ", ""), codec)
				want := keyed(codec)
				c.produce(t, addr, topic, codec, want)
				got := c.consume(t, addr, topic, messages)
				if err := sameRecords(got, want); err != nil {
					t.Fatalf("%s, %s: %v", c.name, codec, err)
				}
				early, late := c.offsets(t, addr, topic)
				if early != 0 || late != messages {
					t.Errorf("%s, %s: earliest %d latest %d, want 0 and %d", c.name, codec, early, late, messages)
				}
				row = append(row, fmt.Sprintf("%s: %d keyed in order, offsets [%d, %d)", codec, len(got), early, late))
			}
			topics := c.topics(t, addr)
			for _, codec := range codecs {
				name := fmt.Sprintf("%s-%s", strings.ReplaceAll(c.name, " ", ""), codec)
				if !contains(topics, name) {
					t.Errorf("%s: metadata lists %q, not %s", c.name, topics, name)
				}
			}
			row = append(row, fmt.Sprintf("metadata: %d topics", len(topics)))
			if c.commit == nil {
				row = append(row, "commit: not offered")
			} else {
				topic := fmt.Sprintf("%s-none", strings.ReplaceAll(c.name, " ", ""))
				if got := c.commit(t, addr, "group-"+strings.ReplaceAll(c.name, " ", ""), topic, 4242); got != 4242 {
					t.Errorf("%s: committed 4242, read back %d", c.name, got)
				}
				row = append(row, "commit 4242: read back")
			}
			report = append(report, strings.Join(row, "; "))
		})
	}
	for _, r := range report {
		t.Log(r)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sameRecords(got, want []record) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d messages read back, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("message %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	return nil
}

// installClients runs the project's script that installs kcat and
// kafka-python (Debian packages).
func installClients(t *testing.T) {
	t.Helper()
	out, err := exec.Command("bash", filepath.Join(repoRoot(t), "scripts", "kafka-clients.sh")).CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/kafka-clients.sh: %v\n%s", err, out)
	}
}

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	root, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root %s: %v", root, err)
	}
	return root
}

// TestIntegration_ClientsReadViews: what is produced through the Kafka
// protocol is fetched from the 0.8 entries the broker keeps beside the log
// (kafka/log/view.go), max_bytes of them per answer, the last entry cut short
// as 0.8's broker cut it. 3,000 keyed messages of about 1 KiB (3 MiB, more
// than any client's default of 1 MiB an answer) written by franz-go, then
// read from the beginning by every client, each key and value intact and in
// order.
func TestIntegration_ClientsReadViews(t *testing.T) {
	if testing.Short() {
		t.Skip("real clients: not in -short")
	}
	installClients(t)
	tb := startBroker(t)
	addr := tb.HostPort()
	want := make([]record, 3000)
	for i := range want {
		want[i] = record{offset: int64(i), key: fmt.Sprintf("key-%d", i), value: fmt.Sprintf("value-%d-%s", i, strings.Repeat("v", 1000+i%7))}
	}
	for _, c := range clients {
		if c.name == "franz-go" {
			c.produce(t, addr, "views", "none", want)
		}
	}
	views, _ := filepath.Glob(filepath.Join(tb.Dir, "views-0", "*.view"))
	if len(views) != 1 {
		t.Fatalf("view files %v, want one: the fetches below would not read from a view", views)
	}
	if fi, err := os.Stat(views[0]); err != nil || fi.Size() < 3_000_000 {
		t.Fatalf("view %s: %v, %v; want at least 3,000,000 bytes", views[0], fi, err)
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			if err := sameRecords(c.consume(t, addr, "views", len(want)), want); err != nil {
				t.Fatalf("%s reading a topic franz-go wrote: %v", c.name, err)
			}
		})
	}
}
