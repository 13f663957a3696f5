// Package protocols is the Kafka protocol's price on the paper's broker, an
// experiment beyond the paper: the same number of messages of one size
// produced and consumed through the paper's protocol (Kafka 0.7's wire
// format: our producer in batches of 50, our simple consumer) and through the
// Kafka protocol as 0.8 defined it (franz-go, a client no one here wrote, with
// its defaults but acks=0, as the paper's producer waits for no answer), each
// into a topic of its own on one broker process. A third reader, our minimal
// Kafka protocol client (Fetch v0, every entry walked and its CRC checked, as
// the simple consumer checks every message, and like it one answer ahead: the
// next request goes before this answer is checked, with the same socket
// receive buffer), reads both topics, so that the broker's side of a Kafka
// protocol fetch is seen apart from franz-go's: of the topic franz-go wrote
// the broker sends the 0.8 entries it kept beside the log (kafka/log/view.go),
// of the other it re-frames every message.
//
// Every phase records the client's and the broker's CPU time per message
// (Linux schedstat, summed over threads), so that the report can say which
// side was busy for the whole phase and so bounded it.
//
// The franz-go phases run in a process of their own built from the test
// module kafka/clientstest (its cmd/protocolspeed), so that the library's
// module does not depend on franz-go; it uses this package's Measure and
// prints its Path as JSON.
package protocols
