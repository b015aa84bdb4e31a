package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/topology"
)

func (a *app) benchCmd() *cobra.Command {
	var cpuProfile string
	var stopProfile func()
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure benchfleet itself: dispatch and submit overhead, worker CPU, query speed, chaos",
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if cpuProfile == "" {
				return nil
			}
			f, err := os.Create(cpuProfile)
			if err != nil {
				return usageErr("--cpuprofile: %v", err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				f.Close()
				return fmt.Errorf("--cpuprofile: %w", err)
			}
			stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
			return nil
		},
		PersistentPostRun: func(*cobra.Command, []string) {
			if stopProfile != nil {
				stopProfile()
			}
		},
	}
	cmd.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the benchmark here (go tool pprof)")
	cmd.AddCommand(a.benchDispatchCmd(), a.benchWorkerCPUCmd(), a.benchSubmitCmd(), a.benchQueryCmd(), a.benchChaosCmd(), a.benchBuildsCmd(), a.benchGateCmd())
	return cmd
}

// benchNATS is an embedded NATS server under dir/nats with a client
// connection and benchfleet's topology: what every bench starts from.
type benchNATS struct {
	srv  *server.Server
	nc   *nats.Conn
	js   jetstream.JetStream
	topo *topology.Handles
}

func startBenchNATS(ctx context.Context, dir string) (*benchNATS, error) {
	srv, err := embedded.Start(embedded.Options{Dir: filepath.Join(dir, "nats")})
	if err != nil {
		return nil, err
	}
	b := &benchNATS{srv: srv}
	if b.nc, err = nats.Connect(srv.ClientURL()); err != nil {
		b.close()
		return nil, err
	}
	if b.js, err = jetstream.New(b.nc); err == nil {
		b.topo, err = topology.Ensure(ctx, b.js, topology.Config{})
	}
	if err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func (b *benchNATS) close() {
	if b.nc != nil {
		b.nc.Close()
	}
	b.srv.Shutdown()
}

// cpuTimes is the machine's cpu line of /proc/stat (Linux): total ticks and
// steal ticks (time the hypervisor gave this VM's CPUs to someone else).
func cpuTimes() (total, steal uint64, ok bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, f := range fields[1:] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		if i < 8 { // user nice system idle iowait irq softirq steal (guest is in user)
			total += n
		}
		if i == 7 {
			steal = n
		}
	}
	return total, steal, true
}

// stealMeter starts measuring CPU steal and returns a note on the steal
// since then (empty where /proc/stat is unreadable): timings on a VM whose
// CPUs were stolen say more about its neighbours than about benchfleet.
func stealMeter() func() string {
	total0, steal0, _ := cpuTimes()
	return func() string {
		total, steal, ok := cpuTimes()
		if !ok || total <= total0 {
			return ""
		}
		pct := 100 * float64(steal-steal0) / float64(total-total0)
		note := ""
		if pct >= 10 {
			note = "; the hypervisor took much of the CPU: re-measure when it is lower"
		}
		return fmt.Sprintf("cpu steal %.0f%% of the machine's CPU time during the run%s", pct, note)
	}
}

// printSteal prints the note of a stealMeter, if any.
func printSteal(w io.Writer, note func() string) {
	if n := note(); n != "" {
		fmt.Fprintln(w, n)
	}
}
