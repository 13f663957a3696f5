package protocol08

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// 0.8's message set (magic 0 of Kafka 0.8, not the paper's magic 0):
//
//	+--------+--------+--------+-------+------------+-----------------+-------------------+
//	| offset | size   | CRC-32 | magic | attributes | key             | value             |
//	| int64  | int32 S| int32  | int8=0| int8       | int32 k | k B   | int32 v | v B     |
//	+--------+--------+--------+-------+------------+-----------------+-------------------+
//	 0        8        12       16      17           18
//
// offset is the message's logical offset, size the bytes after it; the CRC
// covers magic through the end of the value. A message without key or value
// has length -1 there. Attributes' low two bits are the codec; a compressed
// message's value is a whole 0.8 message set, compressed, whose inner
// messages carry their own offsets; the wrapper carries the last one's.
//
// A message with a 200-byte value and no key is 12 + 14 + 200 = 226 bytes, 26
// bytes of overhead where the paper's format has 9.
//
// The log holds the paper's messages (package message), so the broker
// translates: a produced set becomes 0.7 messages (Convert08To07), keyed
// ones with message.AppendKeyed, and a fetched range becomes 0.8 entries
// (Appender).

// EntryOverhead is the bytes of an entry around its key and value.
const EntryOverhead = 8 + 4 + 4 + 1 + 1 + 4 + 4

// ErrCorruptMessage is a produced message that does not check out
// (CORRUPT_MESSAGE, code 2, in the answer).
var ErrCorruptMessage = errors.New("protocol08: corrupt message")

// AppendEntry appends one uncompressed 0.8 entry to dst.
func AppendEntry(dst []byte, offset int64, key, value []byte) []byte {
	return appendEntry(dst, offset, 0, key, value)
}

func appendEntry(dst []byte, offset int64, attributes byte, key, value []byte) []byte {
	dst = appendInt64(dst, offset)
	sizeAt := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0, 0, attributes)
	dst[sizeAt+8] = 0 // magic
	dst = appendBytes(dst, key)
	dst = appendBytes(dst, value)
	binary.BigEndian.PutUint32(dst[sizeAt:], uint32(len(dst)-sizeAt-4))
	binary.BigEndian.PutUint32(dst[sizeAt+4:], crc32.ChecksumIEEE(dst[sizeAt+8:]))
	return dst
}

// Entry is one decoded 0.8 message.
type Entry struct {
	Offset     int64
	Attributes byte
	Key, Value []byte // nil when null
}

// Codec is the entry's compression codec.
func (e Entry) Codec() message.Codec { return message.Codec(e.Attributes & 3) }

// Entries decodes a 0.8 message set. With partialOK, a trailing partial
// entry ends the set (a fetch response may end in one); without, it is
// ErrCorruptMessage (a produced set must be whole). A CRC that does not
// match, a magic other than 0 or a key or value that does not fit its
// message is ErrCorruptMessage.
func Entries(set []byte, partialOK bool, fn func(Entry) error) error {
	for p := 0; p < len(set); {
		if len(set)-p < 12 {
			if partialOK {
				return nil
			}
			return fmt.Errorf("%w: %d bytes at byte %d are too few for an entry's offset and size", ErrCorruptMessage, len(set)-p, p)
		}
		size := int(int32(binary.BigEndian.Uint32(set[p+8:])))
		if size < 4+1+1+4+4 {
			return fmt.Errorf("%w: message size %d at byte %d", ErrCorruptMessage, size, p)
		}
		if size > len(set)-p-12 {
			if partialOK {
				return nil
			}
			return fmt.Errorf("%w: message of %d bytes at byte %d runs past the set's %d", ErrCorruptMessage, size, p, len(set))
		}
		m := set[p+12 : p+12+size]
		e, err := parseMessage(m)
		if err != nil {
			return fmt.Errorf("entry at byte %d: %w", p, err)
		}
		e.Offset = int64(binary.BigEndian.Uint64(set[p:]))
		if err := fn(e); err != nil {
			return err
		}
		p += 12 + size
	}
	return nil
}

// NextOffset is the logical offset after the last whole entry of a fetched
// set, found from the entries' offset and size fields alone (no CRC is
// checked), so that a client can ask for what follows before it checks
// what it has; ok is false when the set holds no whole entry. A compressed
// wrapper carries its last inner message's offset, so the offset after it
// is right for a wrapper too.
func NextOffset(set []byte) (next int64, ok bool) {
	for p := 0; len(set)-p >= 12; {
		size := int(int32(binary.BigEndian.Uint32(set[p+8:])))
		if size < 0 || size > len(set)-p-12 {
			break
		}
		next, ok = int64(binary.BigEndian.Uint64(set[p:]))+1, true
		p += 12 + size
	}
	return next, ok
}

// parseMessage checks and splits one message (CRC onwards). The common
// case, a whole message whose lengths fit, is read here without the
// reader's bookkeeping; anything else goes to parseMessageSlow, which names
// what is wrong.
func parseMessage(m []byte) (Entry, error) {
	if len(m) < 14 || m[4] != 0 || m[5]&^3 != 0 || message.Codec(m[5]&3) > message.CodecSnappy ||
		binary.BigEndian.Uint32(m) != crc32.ChecksumIEEE(m[4:]) {
		return parseMessageSlow(m)
	}
	e := Entry{Attributes: m[5]}
	p := 6
	if k := int64(int32(binary.BigEndian.Uint32(m[p:]))); k >= 0 {
		if k > int64(len(m)-p-8) {
			return parseMessageSlow(m)
		}
		p += 4
		e.Key = m[p : p+int(k) : p+int(k)]
		p += int(k)
	} else if k == -1 {
		p += 4
	} else {
		return parseMessageSlow(m)
	}
	v := int64(int32(binary.BigEndian.Uint32(m[p:])))
	p += 4
	switch {
	case v == int64(len(m)-p):
		e.Value = m[p:len(m):len(m)]
	case v != -1 || p != len(m):
		return parseMessageSlow(m)
	}
	return e, nil
}

// parseMessageSlow is parseMessage with every check spelled out.
func parseMessageSlow(m []byte) (Entry, error) {
	if crc := binary.BigEndian.Uint32(m); crc32.ChecksumIEEE(m[4:]) != crc {
		return Entry{}, fmt.Errorf("%w: CRC %08x does not match %08x", ErrCorruptMessage, crc, crc32.ChecksumIEEE(m[4:]))
	}
	if m[4] != 0 {
		return Entry{}, fmt.Errorf("%w: magic %d (this broker serves 0.8's magic 0)", ErrCorruptMessage, m[4])
	}
	r := reader{b: m[6:], kind: "message"}
	e := Entry{Attributes: m[5]}
	e.Key = r.bytes("key")
	e.Value = r.bytes("value")
	if err := r.end(); err != nil {
		return Entry{}, fmt.Errorf("%w: %w", ErrCorruptMessage, err)
	}
	if e.Attributes&^3 != 0 || e.Codec() > message.CodecSnappy {
		return Entry{}, fmt.Errorf("%w: attributes %#02x", ErrCorruptMessage, e.Attributes)
	}
	return e, nil
}

// Convert08To07 appends to dst the paper's messages for a produced 0.8 set:
// a plain message per plain entry (message.AppendKeyed: keyed when it has a
// key; a null value is stored empty), and for a compressed entry one 0.7
// wrapper of the same codec holding its inner entries so converted. The
// entries' offsets are ignored: the log gives them. count is the number of
// messages, inner ones counted.
func Convert08To07(dst, set []byte) (out []byte, count int, err error) {
	var inner, inner07 []byte
	err = Entries(set, false, func(e Entry) error {
		if e.Codec() == message.CodecNone {
			dst = message.AppendKeyed(dst, e.Key, e.Value)
			count++
			return nil
		}
		var err error
		if inner, err = message.AppendInflated(inner[:0], e.Codec(), e.Value); err != nil {
			return fmt.Errorf("%w: %w", ErrCorruptMessage, err)
		}
		inner07 = inner07[:0]
		n := 0
		err = Entries(inner, false, func(ie Entry) error {
			if ie.Codec() != message.CodecNone {
				return fmt.Errorf("%w: a compressed message inside a compressed message", ErrCorruptMessage)
			}
			inner07 = message.AppendKeyed(inner07, ie.Key, ie.Value)
			n++
			return nil
		})
		if err != nil {
			return fmt.Errorf("inside a %v message: %w", e.Codec(), err)
		}
		if n == 0 {
			return fmt.Errorf("%w: an empty %v message", ErrCorruptMessage, e.Codec())
		}
		if dst, err = message.AppendCompressed(dst, e.Codec(), inner07); err != nil {
			return err
		}
		count += n
		return nil
	})
	return dst, count, err
}

// Appender builds a fetch answer's message set from the log: 0.8 entries
// for the paper's messages, numbered from the logical offset of the first
// one given, skipping those before From, and stopping before an entry that
// would take the set past Max bytes (but always taking the first, whole:
// a client cannot go on past a message it can never fetch whole).
type Appender struct {
	From, Max int64 // the first logical offset wanted; the most bytes
	Set       []byte
	next      int64 // the logical offset of the next message given
	inner     []byte
	full      bool
}

// Reset starts a set whose first message given will have logical offset at.
func (a *Appender) Reset(from, at, max int64) {
	a.From, a.Max, a.next, a.full = from, max, at, false
	a.Set = a.Set[:0]
}

// Full reports whether the set has reached Max.
func (a *Appender) Full() bool { return a.full }

// Next is the logical offset after the last message given.
func (a *Appender) Next() int64 { return a.next }

// Add appends the 0.8 entries for one message of the log: itself, or, for a
// wrapper, each message inside it (sent uncompressed). It reports false
// once the set is full.
func (a *Appender) Add(m message.Message) (bool, error) {
	if a.full {
		return false, nil
	}
	if m.Codec() == message.CodecNone {
		return a.add(m), nil
	}
	var err error
	if a.inner, err = message.Unpack(a.inner[:0], m); err != nil {
		return false, err
	}
	it := message.NewIterator(a.inner, 0)
	for it.Next() {
		if !a.add(it.Message()) {
			return false, nil
		}
	}
	return true, it.Err()
}

func (a *Appender) add(m message.Message) bool {
	n := a.next
	if n < a.From {
		a.next++
		return true
	}
	key, value := keyValue(m)
	if len(a.Set) > 0 && int64(len(a.Set)+EntryOverhead+len(key)+len(value)) > a.Max {
		a.full = true
		return false
	}
	a.Set = AppendEntry(a.Set, n, key, value)
	a.next++
	return true
}

// keyValue is m's key and value as a fetch gives them.
func keyValue(m message.Message) (key, value []byte) {
	key, value, err := m.KeyValue()
	if err != nil { // the log checked it on append; show it as it is
		key, value = nil, m.Payload()
	}
	return key, value
}

// AppendMessage appends to dst the 0.8 entry of m, a plain message of the
// log, at logical offset n: the bytes an Appender gives for it. It is the
// broker's encoder of a log view (log.ViewEncoder), so that a fetch of what
// was produced through the Kafka protocol sends entries as they are kept.
func AppendMessage(dst []byte, m message.Message, n int64) []byte {
	key, value := keyValue(m)
	return AppendEntry(dst, n, key, value)
}

// AppendEntryCodec appends a compressed 0.8 entry whose value is payload,
// a 0.8 message set already compressed with codec (for clients and tests).
func AppendEntryCodec(dst []byte, offset int64, codec message.Codec, payload []byte) []byte {
	return appendEntry(dst, offset, byte(codec), nil, payload)
}
