package broker

import "github.com/kafkarepro/kafkarepro/kafka/protocol"

// handleMultiFetch serves a MULTIFETCH (protocol/multifetch.go): the outer
// header, then per fetch its own header and chunk, each part read as
// fetch.go reads one (docs/PROTOCOL.md §6: a consumer pulls all the
// partitions it owns on this broker at once). All chunks are taken first,
// since the outer header holds their total size, and released when the
// answer has been sent.
func (cn *conn) handleMultiFetch(body []byte) error {
	m, err := cn.dec.MultiFetch(body)
	if err != nil {
		return err
	}
	fetches := m.Fetches
	cn.chunks, cn.codes = cn.chunks[:0], cn.codes[:0]
	defer func() {
		for _, c := range cn.chunks {
			c.Release()
		}
		clear(cn.chunks) // drop the references to segment files
	}()
	budget := protocol.MaxResponseSize - 2 - protocol.ResponseHeaderSize*len(fetches)
	total := 0
	for i := range fetches {
		c, code := cn.read(&fetches[i], budget)
		cn.chunks = append(cn.chunks, c)
		cn.codes = append(cn.codes, code)
		budget -= int(c.Len)
		total += protocol.ResponseHeaderSize + int(c.Len)
	}
	out := protocol.AppendResponseHeader(cn.out[:0], total, protocol.ErrNone)
	for i, c := range cn.chunks {
		out = protocol.AppendResponseHeader(out, int(c.Len), cn.codes[i])
		var err error
		if out, err = cn.sendPart(out, c); err != nil {
			return err
		}
	}
	cn.out = out
	return cn.send.write(out, false)
}
