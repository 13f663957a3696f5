package zk

import (
	"errors"
	"log/slog"
	"strconv"
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
