package log

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/topic"
)

func newManager(t *testing.T, dir string, cfg Config) *Manager {
	t.Helper()
	m, err := NewManager(dir, cfg)
	if err != nil {
		t.Fatalf("NewManager(%s): %v", dir, err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestValidateTopic(t *testing.T) {
	for _, ok := range []string{"a", "clicks", "Page.Views_2-x", "...a", strings.Repeat("x", topic.MaxLength)} {
		if err := ValidateTopic(ok); err != nil {
			t.Errorf("ValidateTopic(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "../x", "a/b", "/abs", `a\b`, "a b", "tö", "x\x00", strings.Repeat("x", 300),
		strings.Repeat("x", topic.MaxLength+1)} {
		if err := ValidateTopic(bad); !errors.Is(err, ErrInvalidTopic) {
			t.Errorf("ValidateTopic(%.40q) = %v, want ErrInvalidTopic", bad, err)
		}
	}
}

func TestManagerRefusesBadTopicsAndPartitions(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "logs")
	cfg := testConfig()
	cfg.NumPartitions = 2
	cfg.TopicPartitions = map[string]int{"wide": 5}
	m := newManager(t, dir, cfg)

	for _, bad := range []string{"../x", "..", ".", "a/b", "", strings.Repeat("y", 300), "../../etc"} {
		if _, err := m.GetOrCreate(bad, 0); !errors.Is(err, ErrInvalidTopic) {
			t.Errorf("GetOrCreate(%.30q) = %v, want ErrInvalidTopic", bad, err)
		}
	}
	for _, c := range []struct {
		topic string
		part  int
	}{{"t", -1}, {"t", 2}, {"wide", 5}} {
		if _, err := m.GetOrCreate(c.topic, c.part); !errors.Is(err, ErrInvalidPartition) {
			t.Errorf("GetOrCreate(%s, %d) = %v, want ErrInvalidPartition", c.topic, c.part, err)
		}
	}
	// Nothing was created, inside or outside the log directory (where only the lock file is).
	if ents, _ := os.ReadDir(dir); len(ents) != 1 || ents[0].Name() != LockFile {
		t.Errorf("log dir holds %v after refused requests, want only %s", ents, LockFile)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 1 {
		t.Errorf("parent of the log dir holds %d entries, want only logs/", len(ents))
	}

	if m.Partitions("t") != 2 || m.Partitions("wide") != 5 {
		t.Errorf("Partitions = %d, %d; want 2, 5", m.Partitions("t"), m.Partitions("wide"))
	}
	l, err := m.GetOrCreate("wide", 4)
	if err != nil {
		t.Fatal(err)
	}
	if l.Dir() != filepath.Join(dir, "wide-4") {
		t.Errorf("partition dir %s", l.Dir())
	}
	if again, _ := m.GetOrCreate("wide", 4); again != l {
		t.Error("GetOrCreate twice gave two logs")
	}
	if _, ok := m.Get("wide", 3); ok {
		t.Error("Get found a partition never created")
	}
}

func TestManagerCleanShutdownAndRecovery(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.NumPartitions = 3
	m, err := NewManager(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for p := range 3 {
		l, err := m.GetOrCreate("my-topic", p)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, makeSet(0, p+1, 20))
	}
	l0, _ := m.GetOrCreate("other", 0)
	mustAppend(t, l0, makeSet(0, 4, 20))
	os.WriteFile(filepath.Join(dir, "stray.txt"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, "no_partition_number"), 0o755)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, CleanShutdownFile)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("no clean-shutdown marker after Close: %v", err)
	}

	// Damage a tail. With the marker present recovery is skipped.
	seg := filepath.Join(dir, "my-topic-2", segmentFileName(0))
	b, _ := os.ReadFile(seg)
	b[len(b)-1] ^= 0xff
	os.WriteFile(seg, b, 0o644)

	m2 := newManager(t, dir, cfg)
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("marker still present after start: %v", err)
	}
	if got := m2.Topics(); !slices.Equal(got, []string{"my-topic", "other"}) {
		t.Fatalf("Topics = %v", got)
	}
	l2, ok := m2.Get("my-topic", 2)
	if !ok || l2.LogEndOffset() != int64(len(b)) {
		t.Fatalf("my-topic-2 after a clean start: found %v, LEO %d; want %d (not recovered)", ok, l2.LogEndOffset(), len(b))
	}
	for p := range 2 { // partition 2 holds the damaged message
		l, _ := m2.Get("my-topic", p)
		checkMessages(t, readAll(t, l, 0, 1000), 0, 0, p+1, 20)
	}

	// Now the next start finds no marker, as after a crash: it recovers.
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(marker)
	m3 := newManager(t, dir, cfg)
	l3, _ := m3.Get("my-topic", 2)
	if want := int64(2 * 29); l3.LogEndOffset() != want {
		t.Fatalf("my-topic-2 after recovery: LEO %d, want %d", l3.LogEndOffset(), want)
	}
	if l, _ := m3.Get("other", 0); l.LogEndOffset() != 4*29 {
		t.Fatalf("other-0 after recovery: LEO %d, want %d", l.LogEndOffset(), 4*29)
	}
}

func TestManagerFlushTimer(t *testing.T) {
	cfg := testConfig()
	cfg.FlushIntervalMs = 20
	m := newManager(t, t.TempDir(), cfg)
	l, err := m.GetOrCreate("timed", 0)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, makeSet(0, 1, 10))
	// §3.1: flushed after a certain amount of time even below the message count.
	waitFor(t, "the flush timer", func() bool { return l.FlushedEnd() == l.LogEndOffset() })
}

func TestManagerRetention(t *testing.T) {
	cfg := testConfig()
	cfg.FileSize = 100
	cfg.RetentionHours = 1
	m := newManager(t, t.TempDir(), cfg)
	l, _ := m.GetOrCreate("r", 0)
	for i := range 6 {
		mustAppend(t, l, makeSet(i, 2, 30)) // 78 bytes: 2 sets per segment
	}
	mustFlush(t, l)
	if n := m.DeleteOldSegments(time.Now().Add(2 * time.Hour)); n != 3 {
		t.Fatalf("Manager.DeleteOldSegments deleted %d, want all 3 (after rolling a fresh one)", n)
	}
	if l.LogEndOffset() != 6*78 || len(l.Segments()) != 1 {
		t.Fatalf("LEO %d, %d segments", l.LogEndOffset(), len(l.Segments()))
	}
}

func TestManagerClosed(t *testing.T) {
	m := newManager(t, t.TempDir(), testConfig())
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetOrCreate("t", 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("GetOrCreate after Close: %v, want ErrClosed", err)
	}
}

// The Manager and its partitions log through Config.Logger with the
// component as an attribute, not through the global logger: what the broker
// passes down is where a recovery or a new partition is reported.
func TestManagerLogsThroughConfigLogger(t *testing.T) {
	dir := t.TempDir()
	var buf strings.Builder
	cfg := testConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	m := newManager(t, dir, cfg)
	if _, err := m.GetOrCreate("clicks", 0); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// An unclean start: the recovery is logged by the partition's Log.
	if err := os.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil {
		t.Fatal(err)
	}
	newManager(t, dir, cfg)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	for _, want := range []string{`msg="created partition"`, `msg="clean shutdown"`,
		`msg="no clean-shutdown marker, recovering`, `msg="recovered segment intact"`} {
		found := false
		for _, l := range lines {
			found = found || strings.Contains(l, want)
		}
		if !found {
			t.Errorf("no line with %s in:\n%s", want, buf.String())
		}
	}
	for _, l := range lines {
		if !strings.Contains(l, " component=log") || strings.Contains(l, `msg="log: `) {
			t.Errorf("line without component=log, or with the old prefix: %s", l)
		}
	}
}

// Two brokers must never share a log.dir: a second Manager on a directory another one holds is refused
// with ErrDirLocked naming the holder, and touches nothing (the clean-shutdown marker a first start would
// remove, the partitions it would recover). Once the first one closes, the directory opens again.
func TestManagerRefusesALockedDirectory(t *testing.T) {
	dir := t.TempDir()
	first, err := NewManager(dir, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	l, err := first.GetOrCreate("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(message.AppendV0(nil, []byte("kept"))); err != nil {
		t.Fatal(err)
	}
	// A marker as a clean shutdown leaves it: the second manager must not remove it.
	marker := filepath.Join(dir, CleanShutdownFile)
	if err := os.WriteFile(marker, []byte("planted"), 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := NewManager(dir, DefaultConfig())
	if !errors.Is(err, ErrDirLocked) || second != nil {
		t.Fatalf("second NewManager on a held directory: %v, want ErrDirLocked", err)
	}
	if want := "pid " + strconv.Itoa(os.Getpid()); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name the directory and the holder (%s)", err, want)
	}
	if data, err := os.ReadFile(marker); err != nil || string(data) != "planted" {
		t.Errorf("the refused manager touched the marker: %q, %v", data, err)
	}
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := NewManager(dir, DefaultConfig())
	if err != nil {
		t.Fatalf("NewManager after the holder closed: %v", err)
	}
	defer again.Close()
	got, ok := again.Get("t", 0)
	if !ok || got.LogEndOffset() != int64(message.HeaderSizeV0+len("kept")) {
		t.Errorf("after reopening: partition %v, %v; want the one message kept", got, ok)
	}
}
