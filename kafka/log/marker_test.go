package log

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// TestCleanShutdownMarkerRecordsLastSegments checks the marker's bytes
// after a clean shutdown, and that a clean start trusts a last segment only
// if it still ends where the marker says: whole, valid messages appended to
// the file behind the log's back (as a failed write on a full disk could
// leave, in 0.7) are cut off, not served.
func TestCleanShutdownMarkerRecordsLastSegments(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.FileSize = 100 // 29-byte messages: a segment rolls after four
	cfg.NumPartitions = 2
	m, err := NewManager(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.GetOrCreate("a", 0)
	b, _ := m.GetOrCreate("a", 1)
	for i := range 5 { // 5 × 29 bytes: segments [0, 116) and [116, 145)
		mustAppend(t, a, makeSet(i, 1, 20))
	}
	mustAppend(t, b, makeSet(0, 2, 20))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, CleanShutdownFile)
	got, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	// a-0: 4 messages of 29 bytes fill the first segment (116 >= 100), so the
	// last one starts at 116 and holds 29; a-1: one segment of 2 × 29 = 58.
	want := "kafkarepro clean shutdown 1\na-0 116 29\na-1 0 58\n"
	if string(got) != want {
		t.Fatalf("marker:\n%q\nwant\n%q", got, want)
	}

	// Append a whole valid message to a-0's last file behind the log's back.
	seg := filepath.Join(dir, "a-0", segmentFileName(116))
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(message.AppendV0(nil, []byte("not appended by the log")))
	f.Close()

	m2 := newManager(t, dir, cfg)
	l, _ := m2.Get("a", 0)
	if l.LogEndOffset() != 145 || fileSize(t, seg) != 29 {
		t.Fatalf("a-0 after the clean start: LEO %d, last file %d bytes; want 145 and 29", l.LogEndOffset(), fileSize(t, seg))
	}
	checkMessages(t, readAll(t, l, 0, 1000), 0, 0, 5, 20)
	if l, _ := m2.Get("a", 1); l.LogEndOffset() != 58 {
		t.Fatalf("a-1: LEO %d, want 58", l.LogEndOffset())
	}
}

// TestMarkerWithoutListRecoversEverything: an empty marker (Kafka 0.7's,
// or this repository's before it recorded sizes) or an unreadable one
// records nothing, so every partition is scanned.
func TestMarkerWithoutListRecoversEverything(t *testing.T) {
	for _, content := range []string{"", "kafkarepro clean shutdown 1\na-0 x 3\n", "some other format\n"} {
		dir := t.TempDir()
		cfg := testConfig()
		m := newManager(t, dir, cfg)
		l, _ := m.GetOrCreate("a", 0)
		mustAppend(t, l, makeSet(0, 3, 20))
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		seg := filepath.Join(dir, "a-0", segmentFileName(0))
		data, _ := os.ReadFile(seg)
		data[len(data)-1] ^= 0xff // damage the last message; the size is unchanged
		os.WriteFile(seg, data, 0o644)
		os.WriteFile(filepath.Join(dir, CleanShutdownFile), []byte(content), 0o644)

		m2 := newManager(t, dir, cfg)
		if l, _ := m2.Get("a", 0); l.LogEndOffset() != 2*29 {
			t.Fatalf("marker %q: LEO %d, want %d (the damaged message cut off)", content, l.LogEndOffset(), 2*29)
		}
	}
}

func TestReadMarker(t *testing.T) {
	path := filepath.Join(t.TempDir(), CleanShutdownFile)
	if _, present, err := readMarker(path); present || err != nil {
		t.Fatalf("no marker: present %v, %v", present, err)
	}
	records := map[string]segmentRecord{"x-0": {0, 0}, "y.z-12": {1 << 40, 12345}}
	if err := writeMarker(path, records); err != nil {
		t.Fatal(err)
	}
	got, present, err := readMarker(path)
	if !present || err != nil || len(got) != 2 || got["x-0"] != records["x-0"] || got["y.z-12"] != records["y.z-12"] {
		t.Fatalf("readMarker = %v, %v, %v; want %v", got, present, err, records)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary marker left behind: %v", err)
	}
}
