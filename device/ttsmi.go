package device

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// MaxSnapshotBytes bounds the tt-smi snapshot ParseSnapshot accepts. A
// 32-chip Galaxy snapshot is a few hundred kilobytes.
const MaxSnapshotBytes = 16 << 20

// Snapshot is the part of a `tt-smi -s` snapshot benchfleet uses. tt-smi
// prints one JSON object: time, host_info, host_sw_vers and device_info[],
// one entry per chip (an n300 board has two: "n300 L", reached over PCIe,
// and "n300 R", reached over Ethernet through it). Values tt-smi prints as
// "N/A" are empty strings here.
type Snapshot struct {
	// Time is the snapshot's time as tt-smi printed it.
	Time string
	// Host is host_info (OS, Kernel, Hostname, Driver, ...).
	Host map[string]string
	// Software is host_sw_vers: package versions by name, "tt_smi" and,
	// by tt-smi version, "pyluwen" and/or "tt_umd" (tt-smi's backends).
	Software map[string]string
	// Chips are the device_info entries, in tt-smi's order.
	Chips []Chip
}

// Chip is one device_info entry of a snapshot.
type Chip struct {
	// Index is the entry's position in device_info.
	Index int
	// BoardType is board_info.board_type as printed: "n150", "n300 L",
	// "n300 R", "p150a", "p300c", ... ("" when tt-smi did not know it).
	BoardType string
	// BoardID is board_info.board_id, the board's serial in hex. The two
	// chips of one n300 share it.
	BoardID string
	// BusID is the PCI address (0000:01:00.0) of a chip reached over PCIe,
	// "" for a chip reached over Ethernet (n300 R, Galaxy remote chips).
	BusID string
	// Coords is board_info.coords for Wormhole chips ("(0, 0, 0, 0)").
	Coords string
	// Firmware holds the firmwares object (fw_bundle_version, cm_fw,
	// eth_fw, ... or arc_fw, m3_app_fw, ... in older tt-smi versions).
	Firmware map[string]string
	// Telemetry holds the telemetry object (voltage, power,
	// asic_temperature, aiclk, heartbeat, ...), strings as tt-smi prints
	// them.
	Telemetry map[string]string
}

// Remote reports whether the chip is reached over Ethernet rather than PCIe
// (it has no device node of its own).
func (c Chip) Remote() bool { return c.BusID == "" }

// FirmwareVersion is the chip's firmware bundle version, or the chip
// management firmware version when tt-smi reports no bundle ("" if none).
func (c Chip) FirmwareVersion() string {
	for _, k := range []string{"fw_bundle_version", "cm_fw", "arc_fw"} {
		if v := c.Firmware[k]; v != "" {
			return v
		}
	}
	return ""
}

var (
	bdfPattern     = regexp.MustCompile(`^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`)
	boardIDPattern = regexp.MustCompile(`^[0-9a-fA-F]{1,32}$`)
)

// ErrSnapshot matches every error ParseSnapshot returns.
var ErrSnapshot = errors.New("tt-smi: bad snapshot")

type snapshotError struct{ msg string }

func (e *snapshotError) Error() string        { return "tt-smi: bad snapshot: " + e.msg }
func (e *snapshotError) Is(target error) bool { return target == ErrSnapshot }

func badSnapshot(format string, args ...any) error {
	return &snapshotError{msg: fmt.Sprintf(format, args...)}
}

// ParseSnapshot decodes a `tt-smi -s` snapshot. It requires one JSON object
// with a device_info array whose entries have a board_info object; a
// board_type, when given, is a string; a bus_id is a PCI address and a
// board_id hex, unless "N/A". Scalar values of board_info, telemetry,
// firmwares and host_info are kept as strings whatever their JSON type
// (tt-smi versions differ); nested objects and arrays there are errors.
// Unknown keys are ignored. Errors match ErrSnapshot and name the field.
func ParseSnapshot(data []byte) (*Snapshot, error) {
	if len(data) > MaxSnapshotBytes {
		return nil, badSnapshot("%d bytes, over the %d byte limit", len(data), MaxSnapshotBytes)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, badSnapshot("empty output")
	}
	if data[0] != '{' {
		return nil, badSnapshot("not a JSON object (starts with %q)", string(data[:min(len(data), 16)]))
	}
	var raw struct {
		Time       json.RawMessage            `json:"time"`
		HostInfo   map[string]json.RawMessage `json:"host_info"`
		HostSWVers map[string]json.RawMessage `json:"host_sw_vers"`
		DeviceInfo *[]json.RawMessage         `json:"device_info"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, badSnapshot("%s: JSON %s where %s was expected", te.Field, te.Value, te.Type)
		}
		return nil, badSnapshot("%v", err)
	}
	if dec.More() {
		return nil, badSnapshot("trailing data after the JSON object")
	}
	if raw.DeviceInfo == nil {
		return nil, badSnapshot("device_info: missing")
	}
	s := &Snapshot{}
	var err error
	if s.Time, err = scalar(raw.Time); err != nil {
		return nil, badSnapshot("time: %v", err)
	}
	if s.Host, err = scalars(raw.HostInfo); err != nil {
		return nil, badSnapshot("host_info.%v", err)
	}
	if s.Software, err = scalars(raw.HostSWVers); err != nil {
		return nil, badSnapshot("host_sw_vers.%v", err)
	}
	for i, entry := range *raw.DeviceInfo {
		c, err := parseChip(i, entry)
		if err != nil {
			return nil, err
		}
		s.Chips = append(s.Chips, c)
	}
	return s, nil
}

func parseChip(i int, entry json.RawMessage) (Chip, error) {
	var raw struct {
		BoardInfo map[string]json.RawMessage `json:"board_info"`
		Telemetry map[string]json.RawMessage `json:"telemetry"`
		Firmwares map[string]json.RawMessage `json:"firmwares"`
	}
	if err := json.Unmarshal(entry, &raw); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Chip{}, badSnapshot("device_info[%d].%s: JSON %s where %s was expected", i, te.Field, te.Value, te.Type)
		}
		return Chip{}, badSnapshot("device_info[%d]: %v", i, err)
	}
	if raw.BoardInfo == nil {
		return Chip{}, badSnapshot("device_info[%d].board_info: missing", i)
	}
	board, err := scalars(raw.BoardInfo)
	if err != nil {
		return Chip{}, badSnapshot("device_info[%d].board_info.%v", i, err)
	}
	if bt, ok := raw.BoardInfo["board_type"]; ok && !isJSONString(bt) && !isJSONNull(bt) {
		return Chip{}, badSnapshot("device_info[%d].board_info.board_type: not a string", i)
	}
	c := Chip{Index: i, BoardType: board["board_type"], BoardID: board["board_id"], BusID: board["bus_id"], Coords: board["coords"]}
	if c.BusID != "" && !bdfPattern.MatchString(c.BusID) {
		return Chip{}, badSnapshot("device_info[%d].board_info.bus_id: %q is not a PCI address like 0000:01:00.0", i, trunc(c.BusID))
	}
	c.BusID = strings.ToLower(c.BusID)
	if c.BoardID != "" && !boardIDPattern.MatchString(c.BoardID) {
		return Chip{}, badSnapshot("device_info[%d].board_info.board_id: %q is not a hex serial", i, trunc(c.BoardID))
	}
	c.BoardID = strings.ToLower(c.BoardID)
	if strings.ContainsAny(c.BoardType, "\x00\n\r") || len(c.BoardType) > 64 {
		return Chip{}, badSnapshot("device_info[%d].board_info.board_type: %q is not a board type", i, trunc(c.BoardType))
	}
	if c.Telemetry, err = scalars(raw.Telemetry); err != nil {
		return Chip{}, badSnapshot("device_info[%d].telemetry.%v", i, err)
	}
	if c.Firmware, err = scalars(raw.Firmwares); err != nil {
		return Chip{}, badSnapshot("device_info[%d].firmwares.%v", i, err)
	}
	return c, nil
}

// scalars turns an object of JSON scalars into strings, dropping nulls and
// "N/A". The error names the key.
func scalars(m map[string]json.RawMessage) (map[string]string, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, err := scalar(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		if s != "" {
			out[k] = s
		}
	}
	return out, nil
}

// scalar returns a JSON scalar as a string: strings trimmed, "N/A" and null
// as "", numbers and booleans as written.
func scalar(v json.RawMessage) (string, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || isJSONNull(v) {
		return "", nil
	}
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", err
		}
		s = strings.TrimSpace(s)
		if s == "N/A" {
			return "", nil
		}
		return s, nil
	case '{', '[':
		return "", errors.New("an object or array where a value was expected")
	default:
		return string(v), nil // number, true, false (already valid JSON)
	}
}

func isJSONString(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '"'
}

func isJSONNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// ttSMI runs tt-smi.
type ttSMI struct {
	path    string
	timeout time.Duration
}

// maxToolOutput bounds what is read from tt-smi.
const maxToolOutput = MaxSnapshotBytes

// run runs tt-smi with args in its own process group, killed with the
// group when ctx ends or the timeout passes. It returns stdout; a failure's
// error carries the end of stderr. tt-smi gets the worker's environment
// without TT_VISIBLE_DEVICES: tt-umd honours it in tt-smi too, and tt-smi
// must see every board of the host (the snapshot pairs all nodes; -r
// looks its target up among the visible devices).
func (t ttSMI) run(ctx context.Context, timeout time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, t.path, args...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "TT_VISIBLE_DEVICES=") })
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = maxToolOutput, 64<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return stdout.Bytes(), fmt.Errorf("%s %s: %w (after %s)", t.path, strings.Join(args, " "), ctx.Err(), timeout)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 1024 {
			msg = "..." + msg[len(msg)-1024:]
		}
		if msg != "" {
			return stdout.Bytes(), fmt.Errorf("%s %s: %w: %s", t.path, strings.Join(args, " "), err, msg)
		}
		return stdout.Bytes(), fmt.Errorf("%s %s: %w", t.path, strings.Join(args, " "), err)
	}
	return stdout.Bytes(), nil
}

// snapshot runs `tt-smi -s --snapshot_no_tty` (plain JSON on stdout), or
// `tt-smi -s` for tt-smi versions without that flag, and parses the result.
// Text before the JSON object (progress lines) is skipped.
func (t ttSMI) snapshot(ctx context.Context) (*Snapshot, error) {
	out, err := t.run(ctx, t.timeout, "-s", "--snapshot_no_tty")
	if err != nil && strings.Contains(err.Error(), "unrecognized arguments") {
		out, err = t.run(ctx, t.timeout, "-s")
	}
	if err != nil {
		return nil, err
	}
	if i := bytes.Index(out, []byte("\n{")); len(bytes.TrimSpace(out)) > 0 && bytes.TrimSpace(out)[0] != '{' && i >= 0 {
		out = out[i+1:]
	}
	return ParseSnapshot(out)
}

// reset runs `tt-smi -r <target>` (resetArgument).
func (t ttSMI) reset(ctx context.Context, timeout time.Duration, target string) error {
	_, err := t.run(ctx, timeout, "-r", target)
	return err
}

// limitedBuffer keeps the first max bytes written and discards the rest.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
