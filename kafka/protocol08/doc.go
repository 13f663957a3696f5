// Package protocol08 is the Kafka protocol as Kafka 0.8 defined it, the one
// today's clients (kcat and librdkafka, kafka-python, franz-go, sarama) still
// speak at its oldest versions, served on the paper's log (docs/PROTOCOL.md
// §12). Package protocol is the 0.7 protocol the paper describes; this one
// shares its error codes and nothing else.
//
// Every request is
//
//	+----------+---------+-------------+----------------+------------------+------+
//	| size     | api_key | api_version | correlation_id | client_id        | body |
//	| int32    | int16   | int16       | int32          | int16 n | n B    |      |
//	+----------+---------+-------------+----------------+------------------+------+
//	 0          4         6             8                12
//
// and every response
//
//	+----------+----------------+------+
//	| size     | correlation_id | body |
//	| int32    | int32          |      |
//	+----------+----------------+------+
//
// Integers are big-endian; a string is an int16 length and UTF-8 bytes (-1:
// null), bytes an int32 length (-1: null), an array an int32 count and its
// items. There is no error in the response header: errors are per topic or
// partition, in the body.
//
// The broker reads the size and the api_key as it reads a 0.7 request's size
// and id (they sit where 0.7's do), and hands the rest, from api_version on,
// to ParseHeader. Which protocol a connection speaks is decided by its first
// request (Is08); see Is08 for the rule.
//
// Messages (messageset.go) are 0.8's: each entry of a message set carries its
// logical offset, and each message a key. The log stores the paper's
// messages; Convert08To07 and Append07As08 translate between the two.
//
// Decoders are strict and total, as package protocol's: they never panic,
// refuse negative lengths and counts that the body cannot hold, and refuse
// bytes left after the body, wrapping ErrMalformed with what and where.
package protocol08
