package rabbitmq

import (
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/compare/comparetest"
)

// The shared suite of compare/comparetest against a real RabbitMQ node started by scripts/rabbitmq.sh.
var suite = comparetest.Suite[*System]{Service: "rabbitmq", Title: "RabbitMQ", Kind: "node", New: New,
	SetIdleTimeout: func(s *System, d time.Duration) { s.IdleTimeout = d }}

// TestIntegration_RabbitMQ_ProduceConsume: 20000 messages of 200 bytes through a durable queue.
func TestIntegration_RabbitMQ_ProduceConsume(t *testing.T) { suite.ProduceConsume(t) }

// TestIntegration_RabbitMQ_KilledMidConsume: a node that dies under a consumer makes Consume return an
// error naming the node's log, not hang.
func TestIntegration_RabbitMQ_KilledMidConsume(t *testing.T) { suite.KilledMidConsume(t) }

// TestIntegration_RabbitMQ_KilledMidProduce: a node that dies under a producer makes Produce return an
// error, not hang.
func TestIntegration_RabbitMQ_KilledMidProduce(t *testing.T) { suite.KilledMidProduce(t) }

// TestIntegration_RabbitMQ_Throughput measures the paper's producer and consumer tests at a size given by
// KAFKAREPRO_MEASURE_MESSAGES (skipped when unset); the harness in package experiments does the real runs.
func TestIntegration_RabbitMQ_Throughput(t *testing.T) { suite.Throughput(t) }
