package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"kafkarepro/compare"
	"kafkarepro/compare/rabbitmq"
)

func main() {
	port, _ := strconv.Atoi(os.Args[1])
	n, _ := strconv.Atoi(os.Args[2])
	s, err := rabbitmq.New(compare.Endpoint{Host: "127.0.0.1", Port: port, DataDir: os.Args[3]})
	if err != nil {
		panic(err)
	}
	var sent atomic.Int64
	go func() {
		last := int64(0)
		for range time.Tick(time.Second) {
			c := sent.Load()
			fmt.Println("sent/s", c-last, "total", c)
			last = c
		}
	}()
	r, err := s.Produce(context.Background(), compare.ProduceSpec{Topic: "m", Messages: n, MessageSize: 200, Batch: 1, Sent: &sent})
	fmt.Println(r, err, float64(n)/r.Elapsed.Seconds())
	d, _ := s.DiskBytes()
	fmt.Println("disk", d, float64(d)/float64(n))
	var rec atomic.Int64
	r, err = s.Consume(context.Background(), compare.ConsumeSpec{Topic: "m", Messages: n, MessageSize: 200, Received: &rec})
	fmt.Println("consume", r, err, float64(n)/r.Elapsed.Seconds())
}
