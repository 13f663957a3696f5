package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// The broker's ZooKeeper registration for enable.zookeeper=true (paper §3.2: /brokers/ids/<brokerid> and
// /brokers/topics/<topic>/<brokerid>, re-created after a session expiry).
func init() {
	newRegistrar = func(cfg broker.Config) (broker.Registrar, error) {
		if cfg.Port == 0 {
			return nil, fmt.Errorf("port=0 (a random port) cannot be registered in ZooKeeper: set a port")
		}
		// Registered by broker.New once it listens (OpenBrokerRegistry).
		r, err := zk.OpenBrokerRegistry(cfg.ZKConnect, cfg.BrokerID, cfg.Hostname, cfg.Port, zk.Options{
			SessionTimeout: time.Duration(cfg.ZKSessionTimeout) * time.Millisecond,
			ConnectTimeout: time.Duration(cfg.ZKConnectionTimeout) * time.Millisecond,
			Logger:         slog.Default(),
		})
		if err != nil {
			return nil, err
		}
		if cfg.Registration08 {
			r.UseJSON()
		}
		return r, nil
	}
}
