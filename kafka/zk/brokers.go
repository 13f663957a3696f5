package zk

import (
	"errors"
	"log/slog"
	"strconv"
	"strings"
)

// LiveBrokers reads the broker registry (/brokers/ids, docs/PROTOCOL.md §5):
// every registered broker by id, none if the path does not exist yet.
// Registrations that cannot be read are skipped and logged to lg (nil:
// slog.Default), as ReadBrokers says.
func LiveBrokers(c *Client, lg *slog.Logger) (map[int]Broker, error) {
	ids, err := c.Children(BrokerIDsPath)
	if errors.Is(err, ErrNoNode) {
		return map[int]Broker{}, nil
	}
	if err != nil {
		return nil, err
	}
	return ReadBrokers(c, ids, lg)
}

// ReadBrokers reads the registrations of the children ids of /brokers/ids (a
// listing the caller made, with or without a watch). A child whose name is
// not a number or whose data does not parse is skipped with a warning on lg
// (nil: slog.Default); one that is gone since the listing is skipped quietly
// (the broker left while we read). Any other ZooKeeper error is returned.
func ReadBrokers(c *Client, ids []string, lg *slog.Logger) (map[int]Broker, error) {
	if lg == nil {
		lg = slog.Default()
	}
	out := make(map[int]Broker, len(ids))
	for _, s := range ids {
		id, err := strconv.Atoi(s)
		if err != nil {
			lg.Warn("ignoring a broker registration whose name is not a number", "node", s)
			continue
		}
		data, epoch, err := c.GetCreated(BrokerIDPath(id))
		if errors.Is(err, ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		b, err := ParseBroker(id, string(data))
		if err != nil {
			lg.Warn("ignoring a broker registration", "err", err)
			continue
		}
		b.Epoch = epoch
		out[id] = b
	}
	return out, nil
}

// TopicRegistrations reads a 0.7 topic's registrations (/brokers/topics/<topic>/<id>, docs/PROTOCOL.md §5):
// each broker that holds the topic, by id, with the number of partitions it registered; none if the topic is
// not registered. Registrations that cannot be read are skipped as ReadTopicRegistrations says.
func TopicRegistrations(c *Client, topic string, lg *slog.Logger) (map[int]int, error) {
	ids, err := c.Children(BrokerTopicPath(topic))
	if errors.Is(err, ErrNoNode) {
		return map[int]int{}, nil
	}
	if err != nil {
		return nil, err
	}
	return ReadTopicRegistrations(c, topic, ids, lg)
}

// ReadTopicRegistrations reads the registrations of the children ids of /brokers/topics/<topic> (a listing the
// caller made, with or without a watch). A child whose name is not a number is skipped; one whose data is not
// a positive number of partitions is skipped with a warning on lg (nil: slog.Default); one that is gone since
// the listing is skipped quietly. Any other ZooKeeper error is returned.
func ReadTopicRegistrations(c *Client, topic string, ids []string, lg *slog.Logger) (map[int]int, error) {
	if lg == nil {
		lg = slog.Default()
	}
	regs := make(map[int]int, len(ids))
	for _, s := range ids {
		id, err := strconv.Atoi(s)
		if err != nil {
			continue
		}
		data, err := c.Get(BrokerTopicBrokerPath(topic, id))
		if errors.Is(err, ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || n <= 0 {
			lg.Warn("ignoring a topic registration", "topic", topic, "broker", id, "data", string(data))
			continue
		}
		regs[id] = n
	}
	return regs, nil
}
