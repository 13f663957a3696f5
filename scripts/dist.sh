#!/usr/bin/env bash
# dist.sh [OUT]: lays out, in OUT (default dist/), the folder the textbook's chapter 3 unpacks and works in,
# kafka_2.9.2-0.8.1.1/, and its tarball kafka_2.9.2-0.8.1.1.tgz, so that the book's
# "tar -xzf kafka_2.9.2-0.8.1.1.tgz; cd kafka_2.9.2-0.8.1.1" leads into it:
#   bin/      the book's scripts (textbook/bin), which run libs/kafka
#   libs/     kafka, this repository's binary (the place of 0.8's jars)
#   libexec/  zookeeper.sh and lib.sh, which start and stop Debian's ZooKeeper (installing it when missing)
#   config/   0.8.1.1's server.properties and zookeeper.properties (textbook/config)
# The name is the book's; what is inside is this repository's broker and tools (textbook/README.md says
# what differs from 0.8.1.1).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
OUT=${1:-$ROOT/dist}
NAME=kafka_2.9.2-0.8.1.1
export PATH=$PATH:/usr/local/go/bin
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "${OUT:?}/$NAME" "$OUT/$NAME.tgz"
mkdir -p "$OUT/$NAME/bin" "$OUT/$NAME/libs" "$OUT/$NAME/libexec" "$OUT/$NAME/config"
(cd "$ROOT" && go build -o "$OUT/$NAME/libs/kafka" ./kafka/cmd/kafka)
cp "$ROOT"/textbook/bin/*.sh "$OUT/$NAME/bin/"
cp "$ROOT"/textbook/config/*.properties "$OUT/$NAME/config/"
cp "$ROOT/scripts/zookeeper.sh" "$ROOT/scripts/lib.sh" "$OUT/$NAME/libexec/"
cp "$ROOT/textbook/README.md" "$OUT/$NAME/README.md"
chmod +x "$OUT/$NAME"/bin/*.sh
tar -czf "$OUT/$NAME.tgz" -C "$OUT" "$NAME"
echo "dist: $OUT/$NAME and $OUT/$NAME.tgz"
