package replication

import (
	"errors"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/message/messagetest"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// A leader refuses a produced set holding a compressed wrapper that does
// not unpack (InvalidMessage, nothing appended), as a 0.7 partition does;
// a follower appends the bytes its leader sends verbatim, unopened
// (docs/PROTOCOL.md §10), so it never stalls on what its leader holds.
func TestLeaderRefusesBadWrapperFollowerCopiesVerbatim(t *testing.T) {
	bad := append(set("a"), messagetest.BadWrappers()[0].Message...)
	leader := replica(t, 1, 1)
	if err := leader.becomeLeader(state(1, 0, 1), 1); err != nil {
		t.Fatal(err)
	}
	before := leader.log.LogEndOffset()
	if _, _, code, err := leader.Append(bad, protocol.AcksLeader); code != protocol.ErrInvalidMessage || !errors.Is(err, log.ErrInvalidMessage) {
		t.Fatalf("leader Append of a bad wrapper: code %v, err %v; want InvalidMessage", code, err)
	}
	if leader.log.LogEndOffset() != before {
		t.Fatalf("the refused set moved the leader's log end from %d to %d", before, leader.log.LogEndOffset())
	}
	follower := replica(t, 2, 1)
	follower.becomeFollower(state(1, 0, 1, 2), 1)
	if err := follower.appendAsFollower(bad, 0, nil, 0); err != nil {
		t.Fatalf("follower append of its leader's bytes: %v", err)
	}
	if got := follower.log.LogEndOffset(); got != int64(len(bad)) {
		t.Fatalf("follower log end %d, want %d", got, len(bad))
	}
}
