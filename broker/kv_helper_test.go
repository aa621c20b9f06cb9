package broker_test

import "github.com/nats-io/nats.go/jetstream"

func jetstreamKV(bucket string) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: bucket}
}
