package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/kafkarepro/kafkarepro/experiments/machine"
	"github.com/kafkarepro/kafkarepro/experiments/protocols"
	"github.com/kafkarepro/kafkarepro/internal/kafkaproc"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
)

// runProtocols runs the protocols experiment against a broker process of its
// own (internal/kafkaproc, the shipped settings): our 0.7 producer and
// consumer in this process, franz-go's producer and consumer in
// kafka/clientstest's cmd/protocolspeed (built here: the test module holds
// franz-go, which the library's module does not), then our minimal Kafka
// protocol client reading both topics.
func runProtocols(ctx context.Context, o options, stderr io.Writer) (*protocols.Result, error) {
	tmp, bin, err := kafkaproc.BuildTemp(ctx, "reproduce-protocols.")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	repo, err := localsvc.RepoDir()
	if err != nil {
		return nil, err
	}
	speed := filepath.Join(tmp, "protocolspeed")
	if err := buildProtocolSpeed(ctx, repo, speed); err != nil {
		return nil, err
	}
	b, err := kafkaproc.Start(ctx, kafkaproc.Options{Bin: bin, Dir: filepath.Join(tmp, "broker"), Host: o.host})
	if err != nil {
		return nil, err
	}
	res := &protocols.Result{Messages: o.protocols, Size: o.size, BrokerSettings: b.Settings(), Cores: runtime.NumCPU()}
	err = protocolPaths(ctx, res, b, speed, o, stderr)
	res.Load = machine.ReadLoad().String()
	return res, errors.Join(err, b.Stop())
}

func protocolPaths(ctx context.Context, res *protocols.Result, b *kafkaproc.Process, speed string, o options, stderr io.Writer) error {
	n, addr, pid := o.protocols, b.Addr(), b.Pid()
	progress := func(s string) { fmt.Fprintln(stderr, "reproduce: protocols:", s) }

	progress("our 0.7 producer and simple consumer")
	p07 := protocols.Path{Name: protocols.Name07, Topic: protocols.Topic07}
	prod, err := protocols.Measure(pid, n, func() error { return protocols.Produce07(ctx, addr, n, o.size) })
	if err != nil {
		return err
	}
	p07.Producer = &prod
	cons, err := protocols.Measure(pid, n, func() error { return protocols.Consume07(ctx, addr, protocols.Topic07, n) })
	if err != nil {
		return err
	}
	p07.Consumer = &cons
	res.Paths = append(res.Paths, p07)

	progress("franz-go (kafka/clientstest/cmd/protocolspeed)")
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, speed, "--broker", addr, "--broker-pid", fmt.Sprint(pid),
		"--messages", fmt.Sprint(n), "--size", fmt.Sprint(o.size))
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("protocolspeed: %v: %s", err, bytes.TrimSpace(errOut.Bytes()))
	}
	var franz protocols.Path
	if err := json.Unmarshal(out.Bytes(), &franz); err != nil {
		return fmt.Errorf("protocolspeed printed %q: %w", out.String(), err)
	}
	res.Paths = append(res.Paths, franz)

	for _, topic := range []string{protocols.Topic08, protocols.Topic07} {
		progress("our minimal Kafka protocol client reading " + topic)
		c, err := protocols.Measure(pid, n, func() error { return protocols.Fetch08(ctx, addr, topic, n) })
		if err != nil {
			return err
		}
		res.Paths = append(res.Paths, protocols.Path{Name: protocols.NameRaw08, Topic: topic, Consumer: &c})
	}
	return nil
}

// buildProtocolSpeed builds kafka/clientstest's cmd/protocolspeed into out.
// Its module needs franz-go from the module proxy the first time.
func buildProtocolSpeed(ctx context.Context, repo, out string) error {
	build := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/protocolspeed")
	build.Dir = filepath.Join(repo, "kafka", "clientstest")
	if b, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/protocolspeed in kafka/clientstest (franz-go comes from the module proxy): %v\n%s", err, b)
	}
	return nil
}
