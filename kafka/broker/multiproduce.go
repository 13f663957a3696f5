package broker

// handleMultiProduce serves a MULTIPRODUCE (protocol/multiproduce.go): each
// of its PRODUCEs is served as produce.go serves one, in order, with no
// answer. A bad set or partition drops only its own part.
func (cn *conn) handleMultiProduce(body []byte) error {
	m, err := cn.dec.MultiProduce(body)
	if err != nil {
		return err
	}
	for i := range m.Produces {
		cn.produce(&m.Produces[i])
	}
	cn.co.quiet = true
	return nil
}
