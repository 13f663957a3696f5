package activemq

import (
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/compare/comparetest"
)

// The shared suite of compare/comparetest against a real ActiveMQ broker started by scripts/activemq.sh.
var suite = comparetest.Suite[*System]{Service: "activemq", Title: "ActiveMQ", Kind: "broker", New: New,
	SetIdleTimeout: func(s *System, d time.Duration) { s.IdleTimeout = d }}

// TestIntegration_ActiveMQ_ProduceConsume: 20000 messages of 200 bytes through the broker and its KahaDB.
func TestIntegration_ActiveMQ_ProduceConsume(t *testing.T) { suite.ProduceConsume(t) }

// TestIntegration_ActiveMQ_KilledMidConsume: a broker that dies under a consumer makes Consume return an
// error naming the broker's log, not hang.
func TestIntegration_ActiveMQ_KilledMidConsume(t *testing.T) { suite.KilledMidConsume(t) }

// TestIntegration_ActiveMQ_KilledMidProduce: a broker that dies under a producer makes Produce return an
// error, not hang.
func TestIntegration_ActiveMQ_KilledMidProduce(t *testing.T) { suite.KilledMidProduce(t) }

// TestIntegration_ActiveMQ_Throughput measures the paper's producer and consumer tests at a size given by
// KAFKAREPRO_MEASURE_MESSAGES (skipped when unset); the harness in package experiments does the real runs.
func TestIntegration_ActiveMQ_Throughput(t *testing.T) { suite.Throughput(t) }
