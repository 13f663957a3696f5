package protocol

import "encoding/binary"

// MultiProduceRequest (id 3) is several PRODUCEs in one request, one per
// (topic, partition), which is how the async producer sends a batch grouped by
// partition (docs/PROTOCOL.md §7):
//
//	int16 count | count PRODUCE bodies
//
// Like PRODUCE it has no response.
type MultiProduceRequest struct {
	Produces []ProduceRequest
}

// RequestID returns RequestMultiProduce.
func (m MultiProduceRequest) RequestID() int16 { return RequestMultiProduce }

// AppendTo appends the framed request to dst.
func (m MultiProduceRequest) AppendTo(dst []byte) []byte {
	size := 2
	for i := range m.Produces {
		size += m.Produces[i].bodySize()
	}
	dst = appendRequestHeader(dst, RequestMultiProduce, size)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(m.Produces)))
	for i := range m.Produces {
		dst = m.Produces[i].appendBody(dst)
	}
	return dst
}

// MultiProduce parses a MULTIPRODUCE body reusing d's memory: the returned
// Produces slice is overwritten by d's next MultiProduce call. Every message
// set is a sub-slice of body.
func (d *Decoder) MultiProduce(body []byte) (MultiProduceRequest, error) {
	r := reader{b: body, kind: "MULTIPRODUCE"}
	produces := d.readProduces(&r)
	if err := r.end(); err != nil {
		return MultiProduceRequest{}, err
	}
	return MultiProduceRequest{Produces: produces}, nil
}

// readProduces reads an int16 count and that many PRODUCE bodies, into d's
// reused slice (a nil d allocates one).
func (d *Decoder) readProduces(r *reader) []ProduceRequest {
	n := r.count(produceMinBody)
	if r.err != nil {
		return nil
	}
	var produces []ProduceRequest
	if d != nil {
		produces = d.produces[:0]
	} else {
		produces = make([]ProduceRequest, 0, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		produces = append(produces, readProduce(r, d))
	}
	if d != nil {
		d.produces = produces
	}
	return produces
}
