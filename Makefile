# Make targets of the Kafka (NetDB'11) reproduction.
#   make reproduce        the paper's §5 experiments at full scale (10M messages)
#   make reproduce-quick  the same at ~200,000 messages, with the regression check
#   make test             every test, real servers included (the hot paths' allocation checks too), plus short fuzz runs
#   make bench            the benchmarks, the hot paths' among them (MB/s, msgs/s and allocations)
#   make perf             producer-perf and consumer-perf against a broker process (docs/PERFORMANCE.md)
GO       ?= go
SERVICES ?= local
SYSTEMS  ?= kafka,activemq,rabbitmq
MESSAGES ?= 10000000
SIZE     ?= 200
OUT      ?=
FUZZTIME ?= 20s
RATIO    ?= 5

OUTFLAG := $(if $(OUT),--out $(OUT),)
# SERVICES=containers builds (or reuses) the images first; auto only uses
# containers when the images are already there.
IMAGES  := $(if $(filter containers,$(SERVICES)),bash scripts/build-images.sh,true)

.PHONY: all build test test-short bench perf fuzz deps reproduce reproduce-quick images clean

all: build

build:
	$(GO) build -o bin/kafka ./kafka/cmd/kafka
	$(GO) build -o bin/reproduce ./experiments/cmd/reproduce

deps:
	bash scripts/install-deps.sh

test: deps
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 70m ./...
	$(MAKE) fuzz

test-short:
	$(GO) test -short -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./kafka/...

perf:
	bash scripts/perf.sh

# Short runs of every fuzz target; the committed corpus under testdata/fuzz
# is replayed by `go test` itself on every run.
fuzz:
	$(GO) test ./kafka/message -run '^$$' -fuzz '^FuzzMessageSet$$' -fuzztime $(FUZZTIME)
	$(GO) test ./kafka/message -run '^$$' -fuzz '^FuzzDecompress$$' -fuzztime $(FUZZTIME)
	$(GO) test ./kafka/protocol -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(FUZZTIME)

reproduce: deps build
	$(IMAGES)
	./bin/reproduce --services $(SERVICES) --systems $(SYSTEMS) --messages $(MESSAGES) --message-size $(SIZE) $(OUTFLAG)

reproduce-quick: deps build
	$(IMAGES)
	./bin/reproduce --quick --services $(SERVICES) --systems $(SYSTEMS) --message-size $(SIZE) --check-ratio $(RATIO) $(OUTFLAG)

images:
	bash scripts/build-images.sh

clean:
	rm -rf bin
