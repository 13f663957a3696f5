package kafka_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/kafkabin"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
)

// serverProcess is `kafka server-start` in its own process.
type serverProcess struct {
	cmd    *exec.Cmd
	addr   string
	stderr *bytes.Buffer
	mu     *sync.Mutex
	exited chan error
}

var servingRE = regexp.MustCompile(`msg="broker serving".* addr=(\S+)`)

// startServer runs the binary on props and waits until it serves.
func startServer(t *testing.T, bin, props string) *serverProcess {
	t.Helper()
	cmd := exec.Command(bin, "server-start", props)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sp := &serverProcess{cmd: cmd, stderr: &bytes.Buffer{}, mu: &sync.Mutex{}, exited: make(chan error, 1)}
	addrCh := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			sp.mu.Lock()
			sp.stderr.WriteString(sc.Text() + "\n")
			sp.mu.Unlock()
			if m := servingRE.FindStringSubmatch(sc.Text()); m != nil {
				addrCh <- m[1]
			}
		}
		io.Copy(io.Discard, pipe)
		sp.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-sp.exited
		}
	})
	select {
	case sp.addr = <-addrCh:
		return sp
	case err := <-sp.exited:
		t.Fatalf("server exited before serving (%v):\n%s", err, sp.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("server not serving after 30s:\n%s", sp.log())
	}
	return nil
}

func (sp *serverProcess) log() string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.stderr.String()
}

// §3.3 against the real binary: the broker is killed with SIGKILL while a
// producer writes, the tail of its last segment is damaged past the last
// flushed offset, and after a restart every message read back has a valid
// CRC, the segments tile, and every message flushed before the kill is
// there with the same bytes.
func TestCrash_KillDamageRestart(t *testing.T) {
	bin := kafkabin.Build(t)
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	props := filepath.Join(dir, "server.properties")
	os.WriteFile(props, []byte("brokerid=0\nhostname=127.0.0.1\nport=0\nlog.dir="+logDir+
		"\nlog.flush.interval=200\nlog.default.flush.interval.ms=20\nlog.file.size=65536\n"), 0o644)
	sp := startServer(t, bin, props)

	// Produce continuously: batches of 1..20 messages of varying sizes.
	cfg := producer.DefaultConfig()
	cfg.BrokerList = "0:" + sp.addr
	p, err := producer.NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var stop atomic.Bool
	var sent atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(1, 2))
		var batch [][]byte
		for i := 0; !stop.Load(); {
			batch = batch[:0]
			for k := rng.IntN(20); k >= 0; k-- {
				batch = append(batch, payload(i, 20+rng.IntN(300)))
				i++
			}
			if p.Send("crash", 0, batch...) != nil {
				return // the broker is gone
			}
			sent.Add(int64(len(batch)))
		}
	}()

	// Let segments roll, then note the flushed end and copy the log up to it.
	c := consumer.NewSimpleConsumer(sp.addr, 10*time.Second)
	defer c.Close()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if l, err := c.LatestOffset("crash", 0); err == nil && l > 4*65536 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker flushed too little in 20s:\n%s", sp.log())
		}
		time.Sleep(10 * time.Millisecond)
	}
	flushed, err := c.LatestOffset("crash", 0)
	if err != nil {
		t.Fatal(err)
	}
	var before []byte
	for int64(len(before)) < flushed {
		set, err := c.Fetch("crash", 0, int64(len(before)), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, set[:min(int64(len(set)), flushed-int64(len(before)))]...)
	}
	if _, _, err := message.Validate(before); err != nil {
		t.Fatalf("flushed log before the crash is already bad: %v", err)
	}

	// kill -9 while the producer is still writing.
	if err := sp.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-sp.exited
	stop.Store(true)
	<-done
	t.Logf("killed the broker after %d messages sent; %d bytes flushed", sent.Load(), flushed)

	// Damage the last segment past the flushed offset: flip a byte in the
	// unflushed tail if there is one, and append garbage.
	partDir := filepath.Join(logDir, "crash-0")
	segs := segmentFiles(t, partDir)
	last := segs[len(segs)-1]
	lastStart, _ := strconv.ParseInt(strings.TrimSuffix(filepath.Base(last), ".kafka"), 10, 64)
	f, err := os.OpenFile(last, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	t.Logf("at the kill: %d segments, the last at %d holding %d bytes", len(segs), lastStart, st.Size())
	if safe := max(0, flushed-lastStart); st.Size() > safe+20 {
		pos := safe + 20 + rand.Int64N(st.Size()-safe-20)
		var b [1]byte
		f.ReadAt(b[:], pos)
		b[0] ^= 0x5a
		f.WriteAt(b[:], pos)
		t.Logf("flipped the byte at offset %d (flushed end %d, file end %d)", lastStart+pos, flushed, lastStart+st.Size())
	}
	// Then two good messages, a torn one (its CRC does not match) and
	// random garbage: recovery must keep the good ones and cut at the torn.
	tail := message.AppendV0(nil, []byte("good after the kill 1"))
	tail = message.AppendV0(tail, []byte("good after the kill 2"))
	torn := len(tail)
	tail = message.AppendV0(tail, []byte("torn by the crash"))
	tail[torn+message.HeaderSizeV0] ^= 0xff
	for i := 0; i < 777; i++ {
		tail = append(tail, byte(rand.IntN(256)))
	}
	f.WriteAt(tail, st.Size())
	f.Close()
	damaged, err := os.ReadFile(last)
	if err != nil {
		t.Fatal(err)
	}
	validInLast, _, _ := message.Validate(damaged)
	wantEnd := lastStart + int64(validInLast)

	// Restart: recovery must leave a log of good messages only.
	sp2 := startServer(t, bin, props)
	c2 := consumer.NewSimpleConsumer(sp2.addr, 10*time.Second)
	defer c2.Close()
	latest, err := c2.LatestOffset("crash", 0)
	if err != nil {
		t.Fatal(err)
	}
	if latest < flushed {
		t.Fatalf("after recovery the log ends at %d, before the %d bytes flushed before the kill", latest, flushed)
	}
	if latest != wantEnd {
		t.Fatalf("after recovery the log ends at %d, want %d: the end of the last whole message with a good CRC", latest, wantEnd)
	}
	segs = segmentFiles(t, partDir)
	var next int64
	for _, s := range segs {
		start, _ := strconv.ParseInt(strings.TrimSuffix(filepath.Base(s), ".kafka"), 10, 64)
		st, err := os.Stat(s)
		if err != nil {
			t.Fatal(err)
		}
		if start != next {
			t.Fatalf("segments do not tile: %s starts at %d, the previous one ends at %d", s, start, next)
		}
		next = start + st.Size()
	}
	if next != latest {
		t.Fatalf("segments end at %d, the broker's latest offset is %d", next, latest)
	}
	// Every message has a valid CRC (the iterator fails on a bad one) and
	// the flushed prefix is byte for byte what was read before the kill.
	it := consumer.NewPartitionIterator(c2, "crash", 0, 0, 1<<20)
	var after []byte
	n := 0
	for it.Poll() {
		after = append(after, it.Message()...)
		n++
	}
	if it.Err() != nil {
		t.Fatalf("reading back after recovery: %v", it.Err())
	}
	if int64(len(after)) != latest {
		t.Fatalf("read %d bytes of whole messages, latest offset %d", len(after), latest)
	}
	if !bytes.Equal(after[:flushed], before) {
		t.Fatalf("the %d bytes flushed before the kill changed", flushed)
	}
	t.Logf("after recovery: %d messages, %d bytes in %d segments", n, latest, len(segs))

	// A clean stop leaves the marker.
	sp2.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-sp2.exited:
		if err != nil {
			t.Fatalf("server-start after SIGTERM: %v\n%s", err, sp2.log())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("server did not stop on SIGTERM")
	}
	if _, err := os.Stat(filepath.Join(logDir, ".kafka_cleanshutdown")); err != nil {
		t.Fatalf("no clean-shutdown marker after SIGTERM: %v", err)
	}
}

// Two brokers on one log.dir (the textbook's step 6 with log.dir forgotten in the copied properties): the
// second is refused at start with an error naming the directory and the holder, and writes nothing there;
// the first goes on serving, and after a kill -9 and a restart every message it took is still there (the
// second's clean-shutdown marker used to make the first's recovery cut them).
func TestCrash_SecondBrokerOnTheSameLogDirIsRefused(t *testing.T) {
	bin := kafkabin.Build(t)
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	props := func(name string, id int) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("brokerid="+strconv.Itoa(id)+"\nhostname=127.0.0.1\nport=0\nlog.dir="+logDir+
			"\nlog.flush.interval=10000\nlog.default.flush.interval.ms=100\n"), 0o644)
		return p
	}
	first := startServer(t, bin, props("server.properties", 0))
	cfg := producer.DefaultConfig()
	cfg.BrokerList = "0:" + first.addr
	p, err := producer.NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 3 {
		if err := p.Send("shared", 0, []byte("message "+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // the flush interval: the messages are visible

	before, _ := os.ReadDir(logDir)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "server-start", props("server-1.properties", 1)).CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Errorf("a second broker on %s did not refuse to start (%v):\n%s", logDir, err, out)
	}
	if !strings.Contains(string(out), logDir) || !strings.Contains(string(out), "pid "+strconv.Itoa(first.cmd.Process.Pid)) ||
		!strings.Contains(string(out), "in use by another process") {
		t.Errorf("the second broker's error does not name the directory and the holder (pid %d):\n%s", first.cmd.Process.Pid, out)
	}
	after, _ := os.ReadDir(logDir)
	if names(before) != names(after) {
		t.Errorf("the refused broker changed the log directory: %s → %s", names(before), names(after))
	}

	first.cmd.Process.Kill()
	<-first.exited
	again := startServer(t, bin, props("server.properties", 0))
	c := consumer.NewSimpleConsumer(again.addr, 10*time.Second)
	defer c.Close()
	set, err := c.Fetch("shared", 0, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for it := message.NewIterator(set, 0); it.Next(); {
		got = append(got, string(it.Message().Payload()))
	}
	if len(got) != 3 {
		t.Errorf("after kill -9 and restart: %q, want the 3 messages", got)
	}
	if strings.Contains(again.log(), "bytesRemoved") {
		t.Errorf("recovery cut bytes:\n%s", again.log())
	}
}

func names(es []os.DirEntry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return strings.Join(out, " ")
}
