package producer_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	_ "github.com/benchfleet/benchfleet/device/sim" // registers the sim runner
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/process"
)

// matrix is a run of two jobs on the synthetic runner.
const matrix = `
defaults: {pool: sim, runner: sim, benchmark: {loop_count: 4, warmup_count: 1}}
matrix:
  benchmark:
    - {model: resnet50, batch_size: 1}
    - {model: mlp, batch_size: 8}
`

// Submit a run, wait for its verdict: a local fleet (an embedded NATS, a
// file store and a worker with two sim slots, as `benchfleet dev` starts)
// runs it, the watcher follows it to its end, and the verdict pipeline
// judges it from the jobs' stored results.
func Example_submitAndWaitForTheVerdict() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "benchfleet-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	fleet, err := process.StartLocal(ctx, process.LocalOptions{DataDir: dir, Options: process.Options{Slots: "sim=2",
		Worker: worker.Config{ID: "example", WorkDir: dir, DrainTimeout: time.Minute}}}, zerolog.Nop())
	if err != nil {
		log.Fatal(err)
	}
	defer fleet.Stop(ctx)

	nc, err := nats.Connect(fleet.URL)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}

	// Submit: the matrix expanded into jobs, published once each.
	m, err := submit.ParseMatrix([]byte(matrix))
	if err != nil {
		log.Fatal(err)
	}
	opts := submit.SubmitOptions{Matrix: m, Run: "example-1"}
	sub, _, err := opts.Submission(submit.Env{Submitter: "example"})
	if err != nil {
		log.Fatal(err)
	}
	p, err := submit.Open(ctx, js, zerolog.Nop())
	if err != nil {
		log.Fatal(err)
	}
	p.Store = fleet.Store() // the manifest is kept with the results too
	res, err := p.Submit(ctx, *sub)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("run %s: %d jobs submitted\n", res.Manifest.Run, len(res.Manifest.Jobs))

	// Wait: the run's events followed to its end, each job's verdict its
	// stored result.
	w := &watch.Watcher{JS: js, Manifest: res.Manifest, Store: fleet.Store()}
	states, err := w.Wait(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}

	// The verdict: the same pipeline as submit --wait, results gate and
	// the dashboard's run page.
	v, err := gate.JudgeRun(ctx, gate.RunInput{Manifest: w.Manifest, States: states})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("outcome %s, %d rows\n", v.Outcome, len(v.Report.Rows))
	// Output:
	// run example-1: 2 jobs submitted
	// outcome PASS, 2 rows
}
