#!/usr/bin/env bash
# kafka-topics.sh: Kafka 0.8.1.1's script of this name, as the textbook's chapter 3 types it: runs `kafka topics`
# (`kafka help topics` lists its flags).
exec "$(dirname "${BASH_SOURCE[0]}")/kafka-run-class.sh" topics "$@"
