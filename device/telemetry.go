package device

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
)

// Sample is one reading of a board's sensors (the shape of a Nomad device
// plugin's Stats). A value the board did not report is NaN.
type Sample struct {
	Time         time.Time
	PowerW       float64
	TemperatureC float64
	// Source says where the readings came from ("hwmon", "tt-smi").
	Source string
	// PowerChips is how many of the board's chips PowerW sums: the device
	// nodes with an hwmon power reading (tt-kmd registers hwmon per PCI
	// function, so an n300's Ethernet-attached chip has none), plus the
	// chips whose tt-smi snapshot telemetry has a power value; 0 when
	// PowerW is NaN.
	PowerChips int
}

// Sampler reads a device's sensors while a job runs. Sample must be cheap
// enough to call every SampleInterval and must not disturb the device;
// built-in slots have no Sampler (nothing to report).
type Sampler interface {
	// Sample reads dev's sensors now.
	Sample(ctx context.Context, dev Device) (Sample, error)
}

// SampleInterval is how often a running job's board is sampled.
const SampleInterval = 250 * time.Millisecond

// TTSampler reads a Tenstorrent board's power and temperature from tt-kmd's
// hwmon files (SysRoot/tenstorrent!N/device/hwmon/hwmon*/power1_input in
// microwatts, temp1_input in millidegrees Celsius: cheap reads that do not
// disturb the device). A board with several device nodes sums power and
// takes the hottest chip. hwmon exists per PCI function, so on an n300 it
// is the L chip's alone (Sample.PowerChips says how many chips the power
// covers). When a node has no hwmon files it falls back to the `tt-smi -s`
// snapshot's telemetry ("power" in W, "asic_temperature" in °C, strings)
// of that node's chip and the Ethernet-attached chips of its board, which
// is slow (seconds) and talks to the firmware: it is read at most every
// SnapshotInterval per device (ErrNoSample between).
type TTSampler struct {
	cfg DiscoverConfig

	mu       sync.Mutex
	lastSnap map[string]time.Time // device id -> last tt-smi snapshot
}

// SnapshotInterval is the least time between two `tt-smi -s` readings of
// one device (tt-smi takes seconds and talks to the board's firmware: it
// must not run back to back while the board is measured).
const SnapshotInterval = 5 * time.Second

// ErrNoSample is returned by a Sampler that has nothing new to report now
// (a rate-limited source); the caller skips the sample.
var ErrNoSample = errors.New("device: no new sample")

// NewTTSampler returns the sampler of devices found with cfg.
func NewTTSampler(cfg DiscoverConfig) *TTSampler {
	return &TTSampler{cfg: cfg.withDefaults(), lastSnap: map[string]time.Time{}}
}

// Sample implements Sampler.
func (s *TTSampler) Sample(ctx context.Context, dev Device) (Sample, error) {
	nodes, err := nodesOf(dev)
	if err != nil {
		return Sample{}, err
	}
	out := Sample{Time: time.Now(), PowerW: math.NaN(), TemperatureC: math.NaN(), Source: "hwmon"}
	var missing []int
	for _, n := range nodes {
		p, t, ok := readHwmon(s.cfg.SysRoot, n)
		if !ok {
			missing = append(missing, n)
			continue
		}
		out.add(p, t)
	}
	if len(missing) > 0 {
		s.mu.Lock()
		last := s.lastSnap[dev.ID]
		if time.Since(last) < SnapshotInterval {
			s.mu.Unlock()
			return out, ErrNoSample
		}
		s.lastSnap[dev.ID] = time.Now()
		s.mu.Unlock()
		out.Source = "tt-smi"
		if err := s.fromSnapshot(ctx, missing, &out); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (s *Sample) add(powerW, tempC float64) {
	if !math.IsNaN(powerW) {
		if math.IsNaN(s.PowerW) {
			s.PowerW = 0
		}
		s.PowerW += powerW
		s.PowerChips++
	}
	if !math.IsNaN(tempC) && (math.IsNaN(s.TemperatureC) || tempC > s.TemperatureC) {
		s.TemperatureC = tempC
	}
}

// readHwmon reads node n's hwmon power (W) and temperature (°C); ok is
// false when the node has no hwmon directory.
func readHwmon(sysRoot string, n int) (powerW, tempC float64, ok bool) {
	dirs, _ := filepath.Glob(filepath.Join(sysRoot, "tenstorrent!"+strconv.Itoa(n), "device", "hwmon", "hwmon*"))
	sort.Strings(dirs)
	powerW, tempC = math.NaN(), math.NaN()
	for _, d := range dirs {
		p, perr := readMicro(filepath.Join(d, "power1_input"), 1e6)
		t, terr := readMicro(filepath.Join(d, "temp1_input"), 1e3)
		if perr != nil && terr != nil {
			continue
		}
		if perr == nil {
			powerW = p
		}
		if terr == nil {
			tempC = t
		}
		return powerW, tempC, true
	}
	return powerW, tempC, false
}

func readMicro(path string, div float64) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s: not a number", path)
	}
	return v / div, nil
}

// fromSnapshot fills nodes' readings from a tt-smi snapshot.
func (s *TTSampler) fromSnapshot(ctx context.Context, nodes []int, out *Sample) error {
	t, err := s.cfg.tool()
	if err != nil {
		return err
	}
	snap, err := t.snapshot(ctx)
	if err != nil {
		return fmt.Errorf("telemetry: tt-smi snapshot: %w", err)
	}
	all, err := deviceNodes(s.cfg.DevRoot)
	if err != nil {
		return err
	}
	byNode, err := pairNodes(s.cfg, all, snap)
	if err != nil {
		return err
	}
	boards := map[string]bool{}
	for _, n := range nodes {
		c, ok := byNode[n]
		if !ok {
			continue
		}
		out.add(parseTelemetry(c.Telemetry["power"]), parseTelemetry(c.Telemetry["asic_temperature"]))
		if c.BoardID != "" {
			boards[c.BoardID] = true
		}
	}
	// The Ethernet-attached chips of those boards (n300 R) have no node of
	// their own but report their telemetry in the snapshot.
	for _, c := range snap.Chips {
		if c.Remote() && boards[c.BoardID] {
			out.add(parseTelemetry(c.Telemetry["power"]), parseTelemetry(c.Telemetry["asic_temperature"]))
		}
	}
	return nil
}

func parseTelemetry(v string) float64 {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsInf(f, 0) {
		return math.NaN()
	}
	return f
}

// Summarize returns the telemetry of the samples taken in [from, to]: the
// number of samples, min/mean/max of each value present, and PowerChips:
// how many of the board's chips the power covers (Sample.PowerChips; the
// least of the samples with power, should they differ). It returns nil
// when no sample falls in the window.
func Summarize(samples []Sample, from, to time.Time) *protocol.Telemetry {
	var power, temp []float64
	n, source, powerChips := 0, "", 0
	for _, s := range samples {
		if s.Time.Before(from) || s.Time.After(to) {
			continue
		}
		n++
		if source == "" {
			source = s.Source
		}
		if !math.IsNaN(s.PowerW) {
			power = append(power, s.PowerW)
			if s.PowerChips > 0 && (powerChips == 0 || s.PowerChips < powerChips) {
				powerChips = s.PowerChips
			}
		}
		if !math.IsNaN(s.TemperatureC) {
			temp = append(temp, s.TemperatureC)
		}
	}
	if n == 0 {
		return nil
	}
	return &protocol.Telemetry{Samples: n, Source: source, PowerW: stat(power), TemperatureC: stat(temp), PowerChips: powerChips}
}

func stat(v []float64) *protocol.Stat {
	if len(v) == 0 {
		return nil
	}
	s := protocol.Stat{Min: v[0], Max: v[0]}
	var sum float64
	for _, x := range v {
		s.Min, s.Max = min(s.Min, x), max(s.Max, x)
		sum += x
	}
	s.Mean = sum / float64(len(v))
	return &s
}
