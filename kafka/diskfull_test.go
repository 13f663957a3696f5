package kafka_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/kafkabin"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// TestIntegration_DiskFull is docs/ROBUSTNESS.md's full disk, against the broker
// binary with its log.dir on a 40 MiB tmpfs the test mounts: sets below and
// above 64 KiB (the buffered and the direct write path) are produced until
// the disk is full and some more after that; then space is freed and the
// broker is stopped (SIGTERM, or kill -9) and started again, either at once
// (the sequence in which the refused set's bytes once became "messages"
// after a clean restart) or after producing more. After the restart every message
// from the earliest offset has a valid CRC, the offsets and the segment
// files tile, OFFSETS latest is the end of the last whole message, and the
// messages read are a prefix of those produced before the disk filled
// followed by every one produced after space returned: no hole. Messages
// produced after the restart are readable too.
func TestIntegration_DiskFull(t *testing.T) {
	needRoot(t)
	bin := kafkabin.Build(t)
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Kill} {
		for _, more := range []bool{false, true} {
			name := strings.ReplaceAll(sig.String(), " ", "-") + map[bool]string{false: "/at-once", true: "/after-producing-more"}[more]
			t.Run(name, func(t *testing.T) { diskFullRun(t, bin, sig, more) })
		}
	}
}

// fullSet is set number i of the disk-full test, messages first.. of one of
// four shapes: 4 KiB and 29 KiB (buffered), 88 KiB and 118 KiB (written
// straight to the file).
func fullSet(i, first int) (set []byte, n int) {
	shapes := [][2]int{{4, 1000}, {90, 1000}, {20, 1500}, {200, 600}}
	s := shapes[i%len(shapes)]
	for k := range s[0] {
		p := []byte(fmt.Sprintf("%09d|", first+k))
		for len(p) < s[1] {
			p = append(p, byte('a'+(first+k+len(p))%26))
		}
		set = message.AppendV0(set, p)
	}
	return set, s[0]
}

func diskFullRun(t *testing.T, bin string, sig os.Signal, produceBeforeStop bool) {
	const topic = "full"
	mnt := mountTmpfs(t, 40<<20)
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, 8<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(mnt, "logs")
	props := writeProps(t, logDir, "log.file.size=8388608", "log.flush.interval=50", "log.default.flush.interval.ms=20")
	sp := startServer(t, bin, props)
	rc := dialRaw(t, sp.addr)

	next, sets := 0, 0         // next message number, sets sent
	setStart := map[int]bool{} // the message numbers that start a set
	produce := func(n int) []int {
		var seqs []int
		for range n {
			set, k := fullSet(sets, next)
			if err := rc.produceRaw(topic, 0, set); err != nil {
				t.Fatalf("produce set %d: %v", sets, err)
			}
			setStart[next] = true
			for j := range k {
				seqs = append(seqs, next+j)
			}
			next, sets = next+k, sets+1
		}
		rc.sync()
		return seqs
	}

	// Phase 1: fill the disk, then 64 sets more (16 of them 4 KiB, which
	// would fit in the write buffer).
	const refusal = "partition refuses appends after a storage error"
	start := time.Now()
	var before []int
	for !strings.Contains(sp.log(), refusal) {
		if sets > 2000 {
			t.Fatalf("the disk did not fill after %d sets:\n%s", sets, sp.log())
		}
		before = append(before, produce(8)...)
	}
	filledAt := time.Since(start)
	before = append(before, produce(64)...)
	// A producer that waits for an answer is told (later Kafka's code 56).
	if res := rc.produce(topic, 0, protocol.AcksLeader, 5*time.Second, "acked while full"); res.Error != protocol.ErrKafkaStorage {
		t.Errorf("an acknowledged produce to the full partition got %v, want %v", res.Error, protocol.ErrKafkaStorage)
	}

	// Phase 2: free space; with produceBeforeStop wait out the probe
	// interval and produce again (the first append heals the partition).
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	var after []int
	if produceBeforeStop {
		time.Sleep(1200 * time.Millisecond)
		after = produce(100)
		if !strings.Contains(sp.log(), "partition accepts appends again") {
			t.Errorf("no line saying the partition healed:\n%s", sp.log())
		}
	}
	c := consumer.NewSimpleConsumer(sp.addr, 10*time.Second)
	latest := waitStable(t, c, topic)
	c.Close()
	if n := strings.Count(sp.log(), refusal); n != 1 {
		t.Errorf("%d ERROR lines for the storage error, want 1:\n%s", n, sp.log())
	}

	stopServer(t, sp, sig)
	if sig == syscall.SIGTERM {
		marker, err := os.ReadFile(filepath.Join(logDir, ".kafka_cleanshutdown"))
		if err != nil || !strings.Contains(string(marker), topic+"-0 ") {
			t.Fatalf("clean-shutdown marker after SIGTERM: %q, %v", marker, err)
		}
	}

	// Restart and read everything back.
	sp2 := startServer(t, bin, props)
	c2 := consumer.NewSimpleConsumer(sp2.addr, 10*time.Second)
	defer c2.Close()
	stored := checkWholeLog(t, c2, filepath.Join(logDir, topic+"-0"), topic)
	// Before the stop, readers saw what the files held; a clean stop also
	// writes out the buffer (the partition heals as it closes), a kill
	// loses it.
	if stored.end < latest || sig == os.Kill && stored.end != latest {
		t.Fatalf("after the restart the log ends at %d, before the %v readers saw up to %d", stored.end, sig, latest)
	}
	kept := len(stored.seqs) - len(after)
	if kept <= 0 || kept >= len(before) {
		t.Fatalf("%d messages stored of %d produced before space returned and %d after: the disk never refused anything, or lost what came after",
			len(stored.seqs), len(before), len(after))
	}
	if !setStart[before[kept]] {
		t.Fatalf("the log keeps messages %d..%d, part of a set: a refused set was stored in part", before[0], before[kept-1])
	}
	want := append(append([]int(nil), before[:kept]...), after...)
	if !slices.Equal(stored.seqs, want) {
		t.Fatalf("the messages read are not a prefix of those produced before the disk filled followed by the %d produced after space returned: a hole, or bytes of a refused set\n%v",
			len(after), firstDiff(stored.seqs, want))
	}

	// Phase 3: the log takes new messages after the restart.
	rc = dialRaw(t, sp2.addr)
	more := produce(20)
	waitStable(t, c2, topic)
	final := checkWholeLog(t, c2, filepath.Join(logDir, topic+"-0"), topic)
	if !slices.Equal(final.seqs, append(want, more...)) {
		t.Fatalf("after the restart: %v", firstDiff(final.seqs, append(want, more...)))
	}
	t.Logf("disk full after %v; %d messages produced before space returned, the first %d stored and %d refused; "+
		"%d produced after space returned and before the stop, all stored; %d more after the restart; log of %d bytes in %d segments, every CRC valid (load %s)",
		filledAt.Round(time.Millisecond), len(before), kept, len(before)-kept, len(after), len(more),
		final.end, final.segments, loadAverage())
}

// wholeLog is what checkWholeLog found.
type wholeLog struct {
	seqs     []int // message numbers in log order
	end      int64 // OFFSETS latest
	segments int
}

// checkWholeLog reads the partition from its earliest offset with every CRC
// checked, and checks that the messages' offsets tile from there to OFFSETS
// latest, and that the segment files in dir tile to the same end.
func checkWholeLog(t *testing.T, c *consumer.SimpleConsumer, dir, topic string) wholeLog {
	t.Helper()
	earliest, err := c.EarliestOffset(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := c.LatestOffset(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, c, topic, 0, earliest, 1<<20)
	var w wholeLog
	off := earliest
	for i, r := range recs {
		if r.off != off {
			t.Fatalf("message %d at offset %d, the previous one ends at %d", i, r.off, off)
		}
		off = r.next
		n, err := strconv.Atoi(string(r.payload[:9]))
		if err != nil {
			t.Fatalf("message at %d: payload %.20q", r.off, r.payload)
		}
		w.seqs = append(w.seqs, n)
	}
	if off != latest {
		t.Fatalf("the last whole message ends at %d, OFFSETS latest says %d", off, latest)
	}
	var segEnd int64 = -1
	for _, s := range segmentFiles(t, dir) {
		start, _ := strconv.ParseInt(strings.TrimSuffix(filepath.Base(s), ".kafka"), 10, 64)
		st, err := os.Stat(s)
		if err != nil {
			t.Fatal(err)
		}
		if segEnd >= 0 && start != segEnd {
			t.Fatalf("segments do not tile: %s starts at %d, the previous one ends at %d", s, start, segEnd)
		}
		segEnd = start + st.Size()
		w.segments++
	}
	if segEnd != latest {
		t.Fatalf("the segment files end at %d, OFFSETS latest says %d", segEnd, latest)
	}
	w.end = latest
	return w
}

// waitStable waits until OFFSETS latest has not moved for 300 ms.
func waitStable(t *testing.T, c *consumer.SimpleConsumer, topic string) int64 {
	t.Helper()
	last, since := int64(-1), time.Now()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		l, err := c.LatestOffset(topic, 0)
		if err != nil {
			t.Fatal(err)
		}
		if l != last {
			last, since = l, time.Now()
		} else if time.Since(since) > 300*time.Millisecond {
			return l
		}
	}
	t.Fatalf("OFFSETS latest of %s still moving after 20s", topic)
	return 0
}

func firstDiff(got, want []int) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("at index %d: read %d, want %d (read %d in all, want %d)", i, got[i], want[i], len(got), len(want))
		}
	}
	return fmt.Sprintf("read %d messages, want %d", len(got), len(want))
}
