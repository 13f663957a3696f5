package main

import (
	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/compare/activemq"
	"github.com/kafkarepro/kafkarepro/compare/rabbitmq"
)

// The adapters of the two systems the paper compares against (compare/activemq
// speaks STOMP, compare/rabbitmq AMQP 0-9-1; see their Settings).
func init() {
	adapters["activemq"] = func(srv compare.Server) (compare.System, error) { return activemq.New(srv.Endpoint()) }
	adapters["rabbitmq"] = func(srv compare.Server) (compare.System, error) { return rabbitmq.New(srv.Endpoint()) }
}
