package containers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/kafkarepro/kafkarepro/internal/kafkaproc"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// spec is how one service runs in a container.
type spec struct {
	service    string
	port       int    // the service's port inside the container
	hostname   string // container host name ("" = Docker's default)
	env        map[string]string
	entrypoint []string
	cmd        []string
	binds      []string // host:container[:ro]
	mkdirs     []string // host directories to create before the start
	wait       []wait.Strategy
	ready      func(ctx context.Context, addr string) error // after wait, from the client's side
	dir        string                                       // host folder of this server
	dataDir    string                                       // Endpoint.DataDir, a host path
	props      map[string]string                            // kafka: server.properties in force
}

func (sp spec) portSpec() string { return strconv.Itoa(sp.port) + "/tcp" }

// Container paths shared by the official images and our stand-ins.
const (
	zkDataPath       = "/data"
	zkDataLogPath    = "/datalog"
	kafkaDataPath    = "/data"
	kafkaLogDir      = "/data/kafka-logs"
	activemqDataPath = "/opt/apache-activemq/data"
	rabbitDataPath   = "/var/lib/rabbitmq"
	rabbitHostname   = "rabbitmq" // node rabbit@rabbitmq keeps mnesia/rabbit@rabbitmq
)

// spec builds the container of service with its files under dir. zkAddr is
// the running ZooKeeper container's address, if any.
func (p *Provider) spec(service, dir, zkAddr string) (spec, error) {
	data := filepath.Join(dir, "data")
	sp := spec{service: service, dir: dir, mkdirs: []string{data}}
	cfg := filepath.Join(p.opts.RepoDir, "compare", "config")
	switch service {
	case "zookeeper":
		// The settings scripts/zookeeper.sh writes to zoo.cfg, through the
		// image's ZOO_* variables (official image and stand-in alike).
		sp.port = 2181
		sp.mkdirs = append(sp.mkdirs, filepath.Join(dir, "datalog"))
		sp.binds = []string{data + ":" + zkDataPath, filepath.Join(dir, "datalog") + ":" + zkDataLogPath}
		sp.env = map[string]string{
			"ZOO_TICK_TIME":              "500",
			"ZOO_INIT_LIMIT":             "20",
			"ZOO_SYNC_LIMIT":             "10",
			"ZOO_MAX_CLIENT_CNXNS":       "0",
			"ZOO_ADMINSERVER_ENABLED":    "false",
			"ZOO_4LW_COMMANDS_WHITELIST": "*",
			"ZOO_CFG_EXTRA":              "minSessionTimeout=1000 maxSessionTimeout=60000",
			"JVMFLAGS":                   "-Xms32m -Xmx256m -XX:+UseSerialGC",
		}
		sp.wait = []wait.Strategy{wait.ForLog("binding to port"), wait.ForListeningPort("2181/tcp")}
		sp.ready = zkServing
		sp.dataDir = dir
	case "kafka":
		sp.port = 9092
		props := kafkaproc.Properties(sp.port, kafkaLogDir)
		for k, v := range p.opts.KafkaProperties {
			props[k] = v
		}
		props["port"], props["log.dir"] = strconv.Itoa(sp.port), kafkaLogDir
		// The entrypoint sets hostname to the container's address.
		delete(props, "hostname")
		if p.opts.KafkaZooKeeper && zkAddr != "" {
			props["enable.zookeeper"], props["zk.connect"] = "true", zkAddr
		}
		sp.props = props
		sp.cmd = []string{"server-start", "/config/server.properties"}
		for _, k := range slices.Sorted(maps.Keys(props)) {
			sp.cmd = append(sp.cmd, "--override", k+"="+props[k])
		}
		sp.binds = []string{data + ":" + kafkaDataPath}
		sp.wait = []wait.Strategy{wait.ForListeningPort("9092/tcp")}
		sp.ready = kafkaServing
		sp.dataDir = filepath.Join(data, "kafka-logs")
	case "activemq":
		// docker/activemq/start.sh installs compare/config/activemq (KahaDB,
		// enableJournalDiskSyncs=false, STOMP) with the JVM settings of
		// scripts/activemq.sh and runs `activemq console`.
		sp.port = 61613
		sp.entrypoint = []string{"/kafka-repro/start.sh"}
		sp.env = map[string]string{"ACTIVEMQ_STOMP_PORT": "61613"}
		sp.binds = []string{
			data + ":" + activemqDataPath,
			filepath.Join(p.opts.RepoDir, "docker", "activemq", "start.sh") + ":/kafka-repro/start.sh:ro",
			filepath.Join(cfg, "activemq") + ":/kafka-repro/config:ro",
		}
		sp.wait = []wait.Strategy{wait.ForLog(") started"), wait.ForListeningPort("61613/tcp")}
		sp.dataDir = data // kahadb/ inside, as scripts/activemq.sh's data=DIR/data
	case "rabbitmq":
		sp.port = 5672
		sp.hostname = rabbitHostname
		sp.binds = []string{
			data + ":" + rabbitDataPath,
			filepath.Join(cfg, "rabbitmq", "rabbitmq.conf") + ":/etc/rabbitmq/conf.d/20-kafka-repro.conf:ro",
			filepath.Join(p.opts.RepoDir, "docker", "rabbitmq", "30-container.conf") + ":/etc/rabbitmq/conf.d/30-container.conf:ro",
			filepath.Join(cfg, "rabbitmq", "enabled_plugins") + ":/etc/rabbitmq/enabled_plugins:ro",
		}
		sp.wait = []wait.Strategy{wait.ForLog("Server startup complete"), wait.ForListeningPort("5672/tcp")}
		// As scripts/rabbitmq.sh's data=DIR/mnesia/<node>.
		sp.dataDir = filepath.Join(data, "mnesia", "rabbit@"+rabbitHostname)
	default:
		return spec{}, fmt.Errorf("%w %q", ErrUnknownService, service)
	}
	if err := checkBinds(sp.binds); err != nil {
		return spec{}, err
	}
	return sp, nil
}

// zkServing waits until ZooKeeper at addr serves requests: it opens its
// client port some time before it does ("This ZooKeeper instance is not
// currently serving requests").
func zkServing(ctx context.Context, addr string) error {
	var last string
	for {
		if reply, err := fourLetter(ctx, addr, "srvr"); err != nil {
			last = err.Error()
		} else if strings.Contains(reply, "Mode: ") {
			return nil
		} else {
			last = strings.TrimSpace(reply)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("zookeeper at %s not serving: %s: %w", addr, last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// kafkaServing waits until the broker at addr answers a request (OFFSETS
// of a topic nobody uses: any answer, error code or not, is the broker's).
// A broker that refused its configuration and exited at once can pass the
// port check and even the container's state check a moment before it
// exits; behind a published port Docker's proxy accepts connections for a
// process that is gone, but none of them gets an answer.
func kafkaServing(ctx context.Context, addr string) error {
	var last error
	for {
		c := consumer.NewSimpleConsumer(addr, time.Second)
		_, err := c.GetOffsetsBefore("kafka-repro-ready", 0, protocol.OffsetsLatest, 1)
		c.Close()
		var code protocol.ErrorCode
		if err == nil || errors.As(err, &code) {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafka at %s not serving: %v: %w", addr, last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// fourLetter sends a ZooKeeper four-letter command and returns the reply.
func fourLetter(ctx context.Context, addr, cmd string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

// checkBinds makes sure every read-only source exists: Docker would
// otherwise create an empty directory in its place and the server would
// start with the wrong configuration.
func checkBinds(binds []string) error {
	for _, b := range binds {
		if !strings.HasSuffix(b, ":ro") {
			continue
		}
		src, _, _ := strings.Cut(b, ":")
		if _, err := statFile(src); err != nil {
			return fmt.Errorf("containers: configuration %s: %w", src, err)
		}
	}
	return nil
}
