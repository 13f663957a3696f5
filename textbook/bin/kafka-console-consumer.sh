#!/usr/bin/env bash
# kafka-console-consumer.sh: Kafka 0.8.1.1's script of this name, as the textbook's chapter 3 types it: runs `kafka console-consumer`
# fetching through the Kafka protocol as 0.8's console consumer did (--protocol 0.8: the topic's partitions and leaders from
# ZooKeeper, Fetch at logical offsets; `kafka help console-consumer` lists its flags).
exec "$(dirname "${BASH_SOURCE[0]}")/kafka-run-class.sh" console-consumer --protocol 0.8 "$@"
