package producer

import "fmt"

// SendKeyedEach sends msgs[i] to the partition the Partitioner picks for keys[i], as SendKeyed would, but
// with one request per partition: each partition's request holds that partition's messages in their order in
// msgs, and the requests go in the order of each partition's first message. A reader of one partition sees
// its messages in the caller's order whatever keys they have (§3.3: order is kept within a partition);
// sending each key's messages together with SendKeyed would reorder messages of different keys that share a
// partition. On an error the requests before the failing one have been sent.
func (p *SyncProducer) SendKeyedEach(topic string, keys, msgs [][]byte) error {
	if len(keys) != len(msgs) {
		return fmt.Errorf("producer: topic %q: %d keys for %d messages: %w", topic, len(keys), len(msgs), ErrBadConfig)
	}
	if len(msgs) == 0 {
		return nil
	}
	tm, err := p.replicatedChecked(topic)
	if err != nil {
		return err
	}
	var parts []Partition
	n := 0
	if tm != nil {
		n = len(tm.leaders)
	} else {
		if err := p.checkTopic(topic); err != nil {
			return err
		}
		if parts, err = p.disc.Partitions(topic); err != nil {
			return err
		}
		n = len(parts)
	}
	if n == 0 {
		return fmt.Errorf("producer: topic %q: %w", topic, ErrNoBrokers)
	}
	// Group by partition index, keeping the order of messages within each and of first appearances.
	var order []int
	groups := map[int][][]byte{}
	for i, m := range msgs {
		x := p.partitioner.Partition(keys[i], n)
		g, seen := groups[x]
		if !seen {
			order = append(order, x)
		}
		groups[x] = append(g, m)
	}
	for _, x := range order {
		if tm != nil {
			err = p.sendReplicated(tm, topic, int32(x), nil, groups[x], nil)
		} else {
			err = p.send(parts[x], topic, groups[x], nil)
		}
		if err != nil {
			return fmt.Errorf("producer: %d messages to %q (partition index %d of %d): %w", len(groups[x]), topic, x, n, err)
		}
	}
	return nil
}
