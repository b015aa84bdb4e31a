package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/protocol"
)

// `benchfleet dev --store s3://…` runs jobs whose results land in the
// bucket at the layout of docs/SCHEMA.md, and `results query --store s3://…`
// returns them.
func TestDevWithS3Store(t *testing.T) {
	gw := s3test.Start(t)
	gw.SetEnv(t) // not parallel: sets the AWS_* environment
	store := gw.URL("farm")
	port := freePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)

	ctx, cancel := context.WithCancel(context.Background())
	devDone := make(chan int, 1)
	var devOut syncBuffer
	go func() {
		devDone <- cmdline.Run(ctx, &devOut, &devOut, "dev", "--data", t.TempDir(), "--listen", fmt.Sprintf("127.0.0.1:%d", port),
			"--slots", "sim=2", "--store", store, "--log-format", "json")
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-devDone:
		case <-time.After(60 * time.Second):
			t.Error("dev did not stop")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dev did not listen: %s", devOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	code, out, errOut := run(t, "submit", "--nats", url, "--store", store, "--pool", "sim", "--model", "simnet", "--batch-size", "4",
		"--loop-count", "8", "--label", "sim.duration=100ms", "--run", "s3run", "--wait", "--timeout", "1m")
	if code != 0 {
		t.Fatalf("submit exit %d:\n%s\n%s", code, out, errOut)
	}
	// The layout: results/v1/date=<run date>/run=<run>/<job>.json under the prefix.
	keys := s3Keys(t, gw, "farm/results/v1/")
	if len(keys) != 1 || !strings.Contains(keys[0], "/run=s3run/") || !strings.HasPrefix(keys[0], "farm/results/v1/date=") {
		t.Fatalf("result keys in the bucket: %v", keys)
	}
	if arts := s3Keys(t, gw, "farm/artifacts/s3run/"); len(arts) == 0 {
		t.Fatal("no artifacts in the bucket")
	}
	code, out, errOut = run(t, "results", "query", "--store", store, "--run", "s3run", "--format", "json")
	if code != 0 {
		t.Fatalf("results query exit %d: %s", code, errOut)
	}
	var rs []protocol.Result
	if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 1 || rs[0].Status != protocol.StatusPassed {
		t.Fatalf("results query: %v %s", err, out)
	}
}

func s3Keys(t *testing.T, gw *s3test.Server, prefix string) []string {
	t.Helper()
	out, err := gw.Client().ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: &gw.Bucket, Prefix: &prefix})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, *o.Key)
	}
	return keys
}

// syncBuffer is safe to read while a command run in process writes to it.
type syncBuffer = clitest.Buffer
