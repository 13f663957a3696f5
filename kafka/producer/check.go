package producer

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// CheckPartition reports whether partition exists for topic where the producer can know it, before
// anything is sent there: a replicated topic's partitions come with its metadata; for a 0.7 topic the
// broker the partition's messages would go to is asked (an OFFSETS request, which a broker answers with
// error 3 for a partition outside the topic's count there, docs/PROTOCOL.md §4). 0.7's PRODUCE has no
// answer, so without this a set sent to a partition that is not there is dropped by the broker unseen.
// An unknown partition is ErrUnknownPartition.
func (p *SyncProducer) CheckPartition(topic string, partition int32, timeout time.Duration) error {
	if partition < 0 {
		return nil
	}
	tm, err := p.replicatedChecked(topic)
	if err != nil {
		return err
	}
	if tm != nil {
		if int(partition) >= len(tm.leaders) {
			return fmt.Errorf("producer: topic %q has %d partitions, no partition %d: %w", topic, len(tm.leaders), partition, ErrUnknownPartition)
		}
		return nil
	}
	dst, err := p.pick(topic, partition, nil)
	if err != nil {
		return err
	}
	b, ok := p.disc.Broker(dst.BrokerID)
	if !ok {
		return fmt.Errorf("producer: broker id %d: %w", dst.BrokerID, ErrNoBrokers)
	}
	addr := net.JoinHostPort(b.Host, strconv.Itoa(b.Port))
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return fmt.Errorf("producer: check partition %d of %q on %s: %w", partition, topic, addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	req := protocol.OffsetsRequest{Topic: topic, Partition: partition, Time: protocol.OffsetsLatest, MaxNumOffsets: 1}
	if _, err := c.Write(req.AppendTo(nil)); err != nil {
		return fmt.Errorf("producer: check partition %d of %q on %s: %w", partition, topic, addr, err)
	}
	code, _, _, err := protocol.ReadResponse(bufio.NewReader(c), nil)
	switch {
	case err != nil:
		return fmt.Errorf("producer: check partition %d of %q on %s: %w", partition, topic, addr, err)
	case code == protocol.ErrWrongPartition:
		return fmt.Errorf("producer: broker %d (%s) has no partition %d of topic %q: %w", b.ID, addr, partition, topic, ErrUnknownPartition)
	}
	return nil
}
