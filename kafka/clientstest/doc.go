// Package clientstest points Kafka clients that no one here wrote at our
// broker, through the Kafka protocol as 0.8 defined it (kafka/protocol08):
// Debian's kcat (librdkafka) and kafka-python, and franz-go and sarama from
// the Go module proxy. It is a module of its own so that the library's module
// does not depend on these clients; `make test` runs it.
package clientstest
