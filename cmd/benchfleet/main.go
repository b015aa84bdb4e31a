// Command benchfleet runs accelerator benchmarks across a farm of device
// hosts. See `benchfleet --help` and the README.
package main

import (
	"context"
	"os"

	"github.com/benchfleet/benchfleet/cmd/benchfleet/cli"
)

func main() {
	os.Exit(cli.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
