#!/usr/bin/env bash
# kafka-console-producer.sh: Kafka 0.8.1.1's script of this name, as the textbook's chapter 3 types it: runs `kafka console-producer`
# (`kafka help console-producer` lists its flags).
exec "$(dirname "${BASH_SOURCE[0]}")/kafka-run-class.sh" console-producer "$@"
