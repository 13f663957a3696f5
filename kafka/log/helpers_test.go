package log

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

func TestMain(m *testing.M) {
	// Keep test output readable: only warnings and errors.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(m.Run())
}

// testConfig flushes only when asked, never retains by itself.
func testConfig() Config {
	c := DefaultConfig()
	c.FlushInterval = 0
	c.FlushIntervalMs = 0
	c.CleanupIntervalMins = 0
	c.RetentionHours = 0
	return c
}

// payload is message i's recognisable payload of size bytes.
func payload(i, size int) []byte {
	p := bytes.Repeat([]byte{byte('a' + i%26)}, size)
	copy(p, fmt.Sprintf("m%d:", i))
	return p
}

// makeSet returns messages first..first+n-1 as one magic-0 set.
func makeSet(first, n, size int) []byte {
	var set []byte
	for i := first; i < first+n; i++ {
		set = message.AppendV0(set, payload(i, size))
	}
	return set
}

func openLog(t *testing.T, dir string, cfg Config, recover bool) *Log {
	t.Helper()
	l, err := Open(dir, cfg, recover)
	if err != nil {
		t.Fatalf("Open(%s, recover=%v): %v", dir, recover, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func mustAppend(t *testing.T, l *Log, set []byte) int64 {
	t.Helper()
	off, err := l.Append(set)
	if err != nil {
		t.Fatalf("Append(%d bytes): %v", len(set), err)
	}
	return off
}

func mustFlush(t *testing.T, l *Log) {
	t.Helper()
	if err := l.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

type readMsg struct {
	offset  int64
	payload string
}

// readAll reads the visible log from offset with fetches of fetchSize bytes,
// the way a consumer does: keep whole messages, fetch again from the first
// byte not used. It checks every CRC.
func readAll(t *testing.T, l *Log, offset int64, fetchSize int) []readMsg {
	t.Helper()
	var out []readMsg
	for offset < l.FlushedEnd() {
		b, err := l.ReadBytes(offset, fetchSize)
		if err != nil {
			t.Fatalf("ReadBytes(%d, %d): %v", offset, fetchSize, err)
		}
		it := message.NewIterator(b, offset)
		for it.Next() {
			m := it.Message()
			if !m.Valid() {
				t.Fatalf("message at offset %d has a bad CRC", it.Offset())
			}
			out = append(out, readMsg{it.Offset(), string(m.Payload())})
		}
		if it.Err() != nil {
			t.Fatalf("iterating fetch at %d: %v", offset, it.Err())
		}
		if it.Consumed() == 0 {
			t.Fatalf("fetch of %d bytes at offset %d holds no whole message (got %d bytes)", fetchSize, offset, len(b))
		}
		offset += int64(it.Consumed())
	}
	return out
}

// checkMessages checks that msgs are messages first..first+n-1 of size bytes,
// back to back from offset base.
func checkMessages(t *testing.T, msgs []readMsg, base int64, first, n, size int) {
	t.Helper()
	if len(msgs) != n {
		t.Fatalf("read %d messages, want %d", len(msgs), n)
	}
	off := base
	for j, m := range msgs {
		if m.offset != off {
			t.Fatalf("message %d at offset %d, want %d", j, m.offset, off)
		}
		if want := string(payload(first+j, size)); m.payload != want {
			t.Fatalf("message %d at offset %d: payload %.20q…, want %.20q…", j, m.offset, m.payload, want)
		}
		off += int64(message.SizeV0(size))
	}
}
