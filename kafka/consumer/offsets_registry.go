package consumer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// The offset registry of paper §3.2: "Each consumer group is associated with an ownership registry and an
// offset registry in Zookeeper ... The offset registry stores for each subscribed partition, the offset of the
// last consumed message in the partition." Its nodes are persistent (§3.2: the paths are "persistent for the
// offset registry"), so offsets outlive every consumer and a group that comes back resumes where it
// was: /consumers/<group>/offsets/<topic>/<brokerid>-<partition> holds the next offset to consume in decimal.

// readOffset returns the committed offset of a partition, or -1 when the group has none.
func readOffset(c *zk.Client, group, topic, part string) (int64, error) {
	p := zk.OffsetPath(group, topic, part)
	data, err := c.Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return -1, nil
	}
	if err != nil {
		return 0, err
	}
	off, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || off < 0 {
		return 0, fmt.Errorf("consumer: offset registry %s holds %q, not an offset", p, data)
	}
	return off, nil
}

// writeOffset records the next offset to consume of a partition, creating the node when missing.
func writeOffset(c *zk.Client, group, topic, part string, off int64) error {
	return c.SetPersistent(zk.OffsetPath(group, topic, part), strconv.AppendInt(nil, off, 10))
}

// commitLocked writes the consumed offset of every owned partition that moved since its last commit (0.7's
// commitOffsets). Called with g.mu held. A failed write is retried at the next commit.
func (g *GroupConsumer) commitLocked() error {
	var errs []error
	n := 0
	for _, p := range g.owned {
		off := p.consumed.Load()
		if off < 0 || off == p.committed {
			continue
		}
		if err := writeOffset(g.zk, g.cfg.GroupID, p.topic, p.name, off); err != nil {
			errs = append(errs, err)
			continue
		}
		p.committed = off
		n++
	}
	if n > 0 {
		g.log.Debug("committed offsets", "partitions", n)
	}
	return errors.Join(errs...)
}

// CommitOffsets writes to the offset registry, for every partition this consumer owns, the offset after the
// last message its streams handed to the application. Messages handed out after the last commit may be
// delivered again after a crash: delivery is at-least-once (paper §3.3).
func (g *GroupConsumer) CommitOffsets() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return ErrGroupClosed
	}
	return g.commitLocked()
}
