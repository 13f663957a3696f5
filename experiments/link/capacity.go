package link

// Framing is what TCP/IP over Ethernet adds to a byte stream on the link,
// as tbf counts it: tbf charges each packet its length from the Ethernet
// header on (a veth has no preamble, frame check sequence or inter-frame
// gap), and charges a TSO packet as the full-sized segments it stands for.
// A full segment of a long transfer is therefore
//
//	Ethernet 14 + IPv4 20 + TCP 20 + timestamps option 12 + payload 1448 = 1514 bytes on the link
//
// for the veth's MTU of 1500 (IP packet 1500 = 20 + 20 + 12 + 1448), and
// 1448 of every 1514 bytes the link carries are our protocol's.
type Framing struct {
	MTU        int  `json:"mtu"`            // the largest IP packet (a veth's default: 1500)
	Timestamps bool `json:"tcp_timestamps"` // both hosts use the TCP timestamps option (Linux's default)
}

// Header sizes of one TCP/IPv4 segment over Ethernet.
const (
	EthernetHeader  = 14
	IPv4Header      = 20
	TCPHeader       = 20
	TimestampOption = 12 // 10 bytes of option, padded to 12
)

// SegmentPayload is the stream bytes one full segment carries (the MSS in
// use): the MTU less the IP and TCP headers and options.
func (f Framing) SegmentPayload() int {
	n := f.MTU - IPv4Header - TCPHeader
	if f.Timestamps {
		n -= TimestampOption
	}
	return n
}

// FrameBytes is what the link carries for one full segment.
func (f Framing) FrameBytes() int { return f.MTU + EthernetHeader }

// StreamBytesPerSec is how many bytes of a TCP stream the link carries per
// second at bits per second, one way: the rate in bytes times
// SegmentPayload / FrameBytes (1 Gb/s: 125,000,000 × 1448 / 1514 =
// 119,550,858 bytes/s).
func (f Framing) StreamBytesPerSec(bits int64) float64 {
	if f.FrameBytes() <= 0 || f.SegmentPayload() <= 0 {
		return 0
	}
	return float64(bits) / 8 * float64(f.SegmentPayload()) / float64(f.FrameBytes())
}

// Capacity is how many messages per second the link carries one way when
// each message takes streamBytes bytes of the TCP stream (payload, our
// 9-byte header and its share of the request's header): 1 Gb/s and
// 209-byte messages, 119,550,858 / 209 = 572,013 msg/s.
func (l *Link) Capacity(streamBytes float64) float64 {
	if streamBytes <= 0 {
		return 0
	}
	return l.Framing.StreamBytesPerSec(l.Spec.BitsPerSec) / streamBytes
}
