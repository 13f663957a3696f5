package log

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/message/messagetest"
)

// A compressed wrapper whose own CRC is right but which does not unpack
// (messagetest.BadWrappers) is refused with its whole set, and the valid sets
// before and after it are kept, also by the recovery that follows a crash
// (§3.3: recovery removes only what fails the checks Append made, so one bad
// client cannot make it cut off the messages written after its set).
func TestAppendRefusesBadWrappers(t *testing.T) {
	const size = 40
	for _, c := range messagetest.BadWrappers() {
		t.Run(c.Name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig()
			l := openLog(t, dir, cfg, false)
			mustAppend(t, l, makeSet(0, 3, size))
			leo := l.LogEndOffset()
			bad := append(makeSet(100, 1, size), c.Message...)
			if _, err := l.Append(bad); !errors.Is(err, ErrInvalidMessage) || !errors.Is(err, c.Want) {
				t.Fatalf("Append of a set ending in the wrapper: %v, want %v and %v", err, ErrInvalidMessage, c.Want)
			}
			if l.LogEndOffset() != leo {
				t.Fatalf("the refused set moved the log end from %d to %d", leo, l.LogEndOffset())
			}
			mustAppend(t, l, makeSet(3, 3, size))
			mustFlush(t, l)
			checkMessages(t, readAll(t, l, 0, 1<<20), 0, 0, 6, size)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2 := openLog(t, dir, cfg, true)
			checkMessages(t, readAll(t, l2, 0, 1<<20), 0, 0, 6, size)
		})
	}
}

// A follower copies its leader's bytes verbatim (docs/PROTOCOL.md §10):
// AppendReplica checks framing and CRCs but does not unpack, so a replica
// never stalls on what its leader holds; framing and CRCs it still refuses.
func TestAppendReplicaDoesNotUnpack(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig(), false)
	w := messagetest.BadWrappers()[0].Message
	if _, err := l.AppendReplica(append(makeSet(0, 2, 10), w...)); err != nil {
		t.Fatalf("AppendReplica: %v", err)
	}
	corrupt := bytes.Clone(w)
	corrupt[len(corrupt)-1] ^= 1
	if _, err := l.AppendReplica(corrupt); !errors.Is(err, ErrInvalidMessage) || !errors.Is(err, message.ErrChecksum) {
		t.Fatalf("AppendReplica of a bad CRC: %v", err)
	}
}
