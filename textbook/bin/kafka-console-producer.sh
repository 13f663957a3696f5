#!/usr/bin/env bash
# kafka-console-producer.sh: Kafka 0.8.1.1's script of this name, as the textbook's chapter 3 types it: runs `kafka console-producer`
# speaking the Kafka protocol as 0.8's console producer did (--protocol 0.8: Metadata, then Produce to each partition's leader;
# `kafka help console-producer` lists its flags).
exec "$(dirname "${BASH_SOURCE[0]}")/kafka-run-class.sh" console-producer --protocol 0.8 "$@"
