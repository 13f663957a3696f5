package containers

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kafkarepro/kafkarepro/internal/kafkaproc"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
)

func repoDir(t *testing.T) string {
	t.Helper()
	dir, err := localsvc.RepoDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestDefaultImagesComeFromImagesEnv(t *testing.T) {
	for _, k := range []string{"ZOOKEEPER_IMAGE", "ACTIVEMQ_IMAGE", "RABBITMQ_IMAGE", "KAFKA_IMAGE"} {
		t.Setenv(k, "") // an empty variable does not override
	}
	want := Images{
		ZooKeeper: "zookeeper:3.8",
		ActiveMQ:  "apache/activemq-classic:5.17.6",
		RabbitMQ:  "rabbitmq:3.10",
		Kafka:     "kafka-repro/broker:latest",
	}
	if got := DefaultImages(); got != want {
		t.Fatalf("DefaultImages() = %+v, want %+v", got, want)
	}
	t.Setenv("RABBITMQ_IMAGE", "example/rabbit:1")
	if got := DefaultImages().RabbitMQ; got != "example/rabbit:1" {
		t.Fatalf("RABBITMQ_IMAGE did not override: %q", got)
	}
	if got := (Images{Kafka: "mine:1"}).withDefaults(); got.Kafka != "mine:1" || got.ZooKeeper != want.ZooKeeper {
		t.Fatalf("withDefaults = %+v", got)
	}
}

// The script, compose and this package must read the same file.
func TestImagesEnvIsSharedByScriptAndCompose(t *testing.T) {
	repo := repoDir(t)
	embedded, err := os.ReadFile("images.env")
	if err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{"docker/images.env", ".env"} {
		b, err := os.ReadFile(filepath.Join(repo, link))
		if err != nil {
			t.Fatalf("%s: %v", link, err)
		}
		if string(b) != string(embedded) {
			t.Errorf("%s differs from compare/containers/images.env; it must be a link to it", link)
		}
	}
	compose, err := os.ReadFile(filepath.Join(repo, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"${ZOOKEEPER_IMAGE:?", "${KAFKA_IMAGE:?", "${ACTIVEMQ_IMAGE:?", "${RABBITMQ_IMAGE:?"} {
		if !strings.Contains(string(compose), v) {
			t.Errorf("docker-compose.yml does not take its image from %s...}", v)
		}
	}
}

// The broker image's baked server.properties (used by docker-compose.yml)
// must hold the local path's settings.
func TestBakedServerPropertiesMatchLocalPath(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoDir(t), "docker", "kafka", "server.properties"))
	if err != nil {
		t.Fatal(err)
	}
	baked := parseEnv(string(b))
	for k, v := range kafkaproc.Properties(9092, kafkaLogDir) {
		if k == "hostname" {
			continue // set by the entrypoint
		}
		if baked[k] != v {
			t.Errorf("docker/kafka/server.properties: %s=%q, local path has %q", k, baked[k], v)
		}
	}
}

func TestSpecs(t *testing.T) {
	p, err := NewProvider(Options{Root: t.TempDir(), KafkaZooKeeper: true, KafkaProperties: map[string]string{"log.flush.interval": "1", "port": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range []string{"zookeeper", "kafka", "activemq", "rabbitmq"} {
		sp, err := p.spec(svc, filepath.Join(p.root, svc), "172.17.0.9:2181")
		if err != nil {
			t.Fatalf("%s: %v", svc, err)
		}
		if sp.port == 0 || len(sp.wait) == 0 || !strings.HasPrefix(sp.dataDir, sp.dir) {
			t.Errorf("%s: incomplete spec %+v", svc, sp)
		}
		for _, b := range sp.binds {
			if src, _, _ := strings.Cut(b, ":"); !filepath.IsAbs(src) {
				t.Errorf("%s: bind source %q is not absolute", svc, src)
			}
		}
	}
	sp, _ := p.spec("kafka", filepath.Join(p.root, "k"), "172.17.0.9:2181")
	args := strings.Join(sp.cmd, " ")
	for _, want := range []string{"--override log.flush.interval=1", "--override port=9092", "--override enable.zookeeper=true", "--override zk.connect=172.17.0.9:2181", "--override log.dir=/data/kafka-logs"} {
		if !strings.Contains(args, want) {
			t.Errorf("kafka command %q lacks %q", args, want)
		}
	}
	if strings.Contains(args, "hostname=") {
		t.Errorf("kafka command %q sets hostname; the entrypoint must", args)
	}
	sp, _ = p.spec("kafka", filepath.Join(p.root, "k2"), "")
	if !slices.Contains(sp.cmd, "enable.zookeeper=false") {
		t.Errorf("without a ZooKeeper container the broker must not use one: %q", sp.cmd)
	}
	if _, err := p.Start(t.Context(), "kafka-0"); err == nil {
		t.Error("Start of an unknown service succeeded")
	}
}

func TestCheckBindsRefusesMissingConfig(t *testing.T) {
	if err := checkBinds([]string{"/nonexistent/kafka-repro.conf:/etc/x.conf:ro"}); err == nil {
		t.Fatal("a missing read-only source was accepted")
	}
	if err := checkBinds([]string{"/nonexistent/data:/data"}); err != nil {
		t.Fatalf("a data bind (created on start) was refused: %v", err)
	}
}

// docker-compose.yml's ZooKeeper must run with the settings this package
// (and scripts/zookeeper.sh) gives it.
func TestComposeZooKeeperSettingsMatchProvider(t *testing.T) {
	compose, err := os.ReadFile(filepath.Join(repoDir(t), "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProvider(Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := p.spec("zookeeper", filepath.Join(p.root, "zk"), "")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range sp.env {
		if line := k + `: "` + v + `"`; !strings.Contains(string(compose), line) {
			t.Errorf("docker-compose.yml lacks %s", line)
		}
	}
}
