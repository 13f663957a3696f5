package containers

import (
	"bufio"
	_ "embed"
	"os"
	"strings"
)

// imagesEnv is the one place image names are written. scripts/build-images.sh
// reads it through docker/images.env and docker-compose.yml through .env,
// both links to this file.
//
//go:embed images.env
var imagesEnv string

// Images names the image of every service. A zero field means the default.
type Images struct {
	ZooKeeper string // ZOOKEEPER_IMAGE, default zookeeper:3.8
	ActiveMQ  string // ACTIVEMQ_IMAGE, default apache/activemq-classic:5.17.6
	RabbitMQ  string // RABBITMQ_IMAGE, default rabbitmq:3.10
	Kafka     string // KAFKA_IMAGE, default kafka-repro/broker:latest
}

// DefaultImages returns the names from images.env, each overridden by the
// environment variable of the same name when it is set, exactly as
// scripts/build-images.sh and docker compose resolve them.
func DefaultImages() Images {
	v := parseEnv(imagesEnv)
	get := func(key string) string {
		if e := os.Getenv(key); e != "" {
			return e
		}
		return v[key]
	}
	return Images{
		ZooKeeper: get("ZOOKEEPER_IMAGE"),
		ActiveMQ:  get("ACTIVEMQ_IMAGE"),
		RabbitMQ:  get("RABBITMQ_IMAGE"),
		Kafka:     get("KAFKA_IMAGE"),
	}
}

// withDefaults fills the zero fields of im from DefaultImages.
func (im Images) withDefaults() Images {
	d := DefaultImages()
	if im.ZooKeeper == "" {
		im.ZooKeeper = d.ZooKeeper
	}
	if im.ActiveMQ == "" {
		im.ActiveMQ = d.ActiveMQ
	}
	if im.RabbitMQ == "" {
		im.RabbitMQ = d.RabbitMQ
	}
	if im.Kafka == "" {
		im.Kafka = d.Kafka
	}
	return im
}

// For returns the image of service ("" for an unknown service).
func (im Images) For(service string) string {
	switch service {
	case "zookeeper":
		return im.ZooKeeper
	case "activemq":
		return im.ActiveMQ
	case "rabbitmq":
		return im.RabbitMQ
	case "kafka":
		return im.Kafka
	}
	return ""
}

// parseEnv reads KEY=value lines, skipping blanks and # comments.
func parseEnv(text string) map[string]string {
	m := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}
