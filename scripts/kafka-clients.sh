#!/usr/bin/env bash
# Installs the Kafka clients no one here wrote, that the Kafka protocol tests
# point at our broker (kafka/clients08_test.go): Debian's kcat (librdkafka) and
# python3-kafka (kafka-python, for Debian's /usr/bin/python3). franz-go and
# sarama come from the Go module proxy, in the test module kafka/clients08.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
need_package kcat command -v kcat
# From /, so that this repository's kafka/ directory does not shadow the module.
need_package python3-kafka sh -c 'cd / && /usr/bin/python3 -c "import kafka.producer"'
# kafka-python compresses snappy through python-snappy.
need_package python3-snappy sh -c 'cd / && /usr/bin/python3 -c "import snappy"'
echo "kafka-clients: $(kcat -V 2>&1 | grep -m1 -i version), kafka-python $(cd / && /usr/bin/python3 -c 'import kafka.version; print(kafka.version.__version__)')"
