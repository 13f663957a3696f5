# Make targets of the Kafka (NetDB'11) reproduction.
#   make reproduce        the paper's §5 experiments at full scale (10M messages)
#   make reproduce-quick  the same at ~200,000 messages, with the regression check
#                         (both: NETWORK=1gbit puts servers and clients on two hosts joined by a
#                         1 Gb/s link, two network namespaces and tc tbf; any rate tc takes, e.g.
#                         NETWORK=10gbit; needs root. Default NETWORK=loopback, one machine)
#   make test             every test, real servers included (the hot paths' allocation checks too), the Kafka
#                         clients of kafka/clientstest (a module of its own), plus short fuzz runs
#   make test-faults      replication's fault tests at length (kill -9, damaged logs, cuts, slow links; failover times)
#   make bench            the benchmarks, the hot paths' among them (MB/s, msgs/s and allocations)
#   make perf             producer-perf and consumer-perf against a broker process (docs/PERFORMANCE.md)
#   make perf-check       the hot paths against a base commit (results/perf/baseline, or BASE=<rev>):
#                         instructions per message (callgrind), allocations, wall clock; fails on a regression
#   make ceiling          the machine's ceiling for our workload beside producer-perf and consumer-perf
#   make dist             the textbook's kafka_2.9.2-0.8.1.1/ folder and .tgz, in dist/
GO       ?= go
# Where the servers of the experiments run: auto (containers whenever a
# Docker engine answers and the images can be had, which reproduce makes
# with scripts/build-images.sh; else the Debian packages), containers, local.
SERVICES ?= auto
SYSTEMS  ?= kafka,activemq,rabbitmq
MESSAGES ?= 10000000
SIZE     ?= 200
OUT      ?=
# A count of executions, not a duration: with a duration, go1.26's fuzz
# coordinator can report its own deadline as a failure ("context deadline
# exceeded", no crasher written; golang/go#75804, fixed in go1.27). 600000
# runs take 12-15 s per target on this machine.
FUZZTIME ?= 600000x
RATIO    ?= 5
NETWORK  ?= loopback

OUTFLAG := $(if $(OUT),--out $(OUT),)

.PHONY: all build dist test test-short bench perf perf-check ceiling fuzz deps reproduce reproduce-quick images clean

all: build

build:
	$(GO) build -o bin/kafka ./kafka/cmd/kafka
	$(GO) build -o bin/reproduce ./experiments/cmd/reproduce

# The folder and tarball the textbook's chapter 3 unpacks, kafka_2.9.2-0.8.1.1 (scripts/dist.sh), in DIST.
DIST ?= dist
dist:
	bash scripts/dist.sh $(DIST)

deps:
	bash scripts/install-deps.sh

test: deps
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 70m ./...
	cd kafka/clientstest && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m ./...
	$(MAKE) fuzz

# Replication's fault tests (kafka/faults_test.go, kafka/faults_netns_test.go: hosts in network
# namespaces, a leader cut off by iptables, a follower slowed by tc; kafka/failover_test.go) with more
# rounds and longer runs than `make test` gives them; -v prints what each acknowledged, read back, lost
# and duplicated, and the failover times. The namespace tests need root (they skip without it).
.PHONY: test-faults
test-faults: deps
	FAULTS=long $(GO) test -count=1 -v -timeout 40m -run '^TestIntegration_(Fault|Failover)' ./kafka/

test-short:
	$(GO) test -short -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./kafka/...

perf:
	bash scripts/perf.sh

perf-check: deps
	$(GO) run ./experiments/cmd/perfcheck $(if $(BASE),--base $(BASE),)

ceiling:
	$(GO) run ./experiments/cmd/ceiling --messages $(MESSAGES) --message-size $(SIZE)

# Short runs of every fuzz target; the committed corpus under testdata/fuzz
# is replayed by `go test` itself on every run.
fuzz:
	$(GO) test ./kafka/message -run '^$$' -fuzz '^FuzzMessageSet$$' -fuzztime $(FUZZTIME)
	$(GO) test ./kafka/message -run '^$$' -fuzz '^FuzzDecompress$$' -fuzztime $(FUZZTIME)
	$(GO) test ./kafka/protocol -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(FUZZTIME)
	$(GO) test ./kafka/protocol08 -run '^$$' -fuzz '^FuzzDecode08$$' -fuzztime $(FUZZTIME)

# No deps here: with Docker nothing needs installing, and the local servers'
# scripts install their Debian package when it is missing.
reproduce: build
	./bin/reproduce --services $(SERVICES) --network $(NETWORK) --systems $(SYSTEMS) --messages $(MESSAGES) --message-size $(SIZE) $(OUTFLAG)

reproduce-quick: build
	./bin/reproduce --quick --services $(SERVICES) --network $(NETWORK) --systems $(SYSTEMS) --message-size $(SIZE) --check-ratio $(RATIO) $(OUTFLAG)

images:
	bash scripts/build-images.sh

clean:
	rm -rf bin dist
