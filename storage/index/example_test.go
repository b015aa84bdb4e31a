package index_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/storage/index"
	"github.com/benchfleet/benchfleet/storage/storeurl"
)

// Query results: a store holding a week of synthetic results (as `bench
// query` writes them), compacted into the Parquet index, then asked for
// one model's passed results on main.
func ExampleQuery() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "benchfleet-query-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	b, err := storeurl.Open(ctx, "file://"+dir, zerolog.Nop())
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	end := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if err := index.WriteSynth(ctx, b, index.SynthOptions{Results: 480, Days: 7, End: end}); err != nil {
		log.Fatal(err)
	}
	if _, err := index.Compact(ctx, b, index.CompactOptions{}); err != nil {
		log.Fatal(err)
	}
	rs, stats, err := index.Query(ctx, b, index.Filter{Model: "resnet50", Branch: "main", Status: "passed"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d results of resnet50 on main, %d of 7 date partitions read from the index\n", len(rs), stats.IndexPartitions)
	// Output: 38 results of resnet50 on main, 7 of 7 date partitions read from the index
}
