package protocol

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Schema names carried in every document's "schema" field.
const (
	SchemaJob      = "benchfleet.job/v1"
	SchemaResult   = "benchfleet.result/v1"
	SchemaEvent    = "benchfleet.event/v1"
	SchemaWorker   = "benchfleet.worker/v1"
	SchemaManifest = "benchfleet.manifest/v1"
	SchemaDead     = "benchfleet.dead/v1"
)

// Limits on job fields. A job outside them is invalid; they keep a typo (an
// extra zero) from occupying a device for a day.
const (
	// MaxJobBytes bounds a job's payload. A dead letter embeds a payload up
	// to this size whole (base64 in JSON, about 4/3 of it), so every dead
	// letter of a valid-sized job fits a default nats-server's 1 MB max
	// payload with room to spare; of a bigger payload it keeps only the
	// first DeadPayloadPrefix bytes and the digest (DeadLetter.Payload).
	MaxJobBytes = 64 << 10
	// DeadPayloadPrefix is how much of an oversize payload a dead letter
	// keeps.
	DeadPayloadPrefix = 1 << 10
	// MaxDeadReason bounds a dead letter's reason.
	MaxDeadReason  = 4 << 10
	MaxBatchSize   = 4096
	MaxLoopCount   = 1_000_000
	MaxWarmupCount = 100_000
	MaxInputSize   = 4096
	MaxLabels      = 64
	MaxLabelKey    = 64
	MaxLabelValue  = 512
	MaxJobTimeout  = 48 * time.Hour
	// DefaultPCCMin is the PCC a built-in runner's result must reach when
	// the job sets no limits.pcc_min (an upstream harness judges its own).
	DefaultPCCMin = 0.99
)

// Names of the runners benchfleet ships. The set is open: runner kinds
// register themselves with the device package (device.Register), and a job
// names one by its registered name. The protocol checks only the name's
// shape (ValidRunnerName); whether a host has the runner is the worker's
// and submit's question.
const (
	RunnerForge = "forge"
	RunnerTTXLA = "tt-xla"
	RunnerCPU   = "cpu"
	RunnerSim   = "sim"
)

// DefaultHarness is the runner of a Tenstorrent pool's job that names none.
const DefaultHarness = RunnerForge

// ValidRunnerName reports whether name has the shape of a runner name:
// lower-case letters, digits and '-', starting with a letter, at most 32.
func ValidRunnerName(name string) bool {
	return shaped(name, classLower, classRunner, 32) // ^[a-z][a-z0-9-]{0,31}$
}

// DefaultRunner is the runner of a pool when a job names none: a built-in
// pool (cpu, sim) runs its built-in runner, a Tenstorrent pool the
// DefaultHarness.
func DefaultRunner(pool string) string {
	if IsBuiltinPool(pool) {
		return pool
	}
	return DefaultHarness
}

// Data formats the harness accepts.
const (
	FormatFloat32  = "float32"
	FormatBfloat16 = "bfloat16"
)

// Job is one benchmark to run on one device: a cell of a run's matrix.
type Job struct {
	Schema    string            `json:"schema"`
	ID        string            `json:"id"`
	Run       string            `json:"run"`
	CreatedAt time.Time         `json:"created_at"`
	Pool      string            `json:"pool"`
	Priority  Priority          `json:"priority"`
	Runner    string            `json:"runner"`
	Benchmark Benchmark         `json:"benchmark"`
	Source    Source            `json:"source,omitzero"`
	Limits    Limits            `json:"limits,omitzero"`
	Labels    map[string]string `json:"labels,omitempty"`
	// Repeat numbers a confirmation repeat of a job (1..MaxRepeat): the
	// same cell run again so a suspected regression is judged on several
	// attempts. It is part of the cell (a repeat has its own id) but not
	// of the series; 0, the original, leaves the cell as it always was.
	Repeat int `json:"repeat,omitempty"`
	// Avoid names boards (a result's device, "<worker>/<device>") the job
	// would rather not run on: a worker holding one passes the job on for
	// a few deliveries so another board of the pool can take it, then runs
	// it itself. A preference, not part of the cell, honoured only on a
	// confirmation repeat (Repeat > 0): only there are the deliveries a
	// pass takes not counted against the job's attempts.
	Avoid []string `json:"avoid,omitempty"`
}

// MaxRepeat bounds Job.Repeat; MaxAvoid bounds Job.Avoid.
const (
	MaxRepeat = 20
	MaxAvoid  = 16
)

// Benchmark says what to run, in the upstream harness's terms.
type Benchmark struct {
	// Test is the pytest node id (forge runner), e.g.
	// "forge/test/benchmark/test_vision.py::test_resnet50". Optional for
	// built-in runners.
	Test  string `json:"test,omitempty"`
	Model string `json:"model"`
	// BatchSize, LoopCount, WarmupCount are positive. WarmupCount defaults to
	// min(32, LoopCount) (see Normalize).
	BatchSize   int `json:"batch_size"`
	LoopCount   int `json:"loop_count"`
	WarmupCount int `json:"warmup_count"`
	// DataFormat is float32 or bfloat16 (the default).
	DataFormat string `json:"data_format"`
	// Training is not supported by the harness; a job asking for it fails.
	Training bool `json:"training,omitempty"`
	// InputSize is the spatial size of the input (224 means 3x224x224 for
	// vision models; the feature width for mlp). 0 = the model's default.
	InputSize int `json:"input_size,omitempty"`
}

// Source says which code was benchmarked.
type Source struct {
	Project string `json:"project,omitempty"`
	Repo    string `json:"repo,omitempty"`
	Commit  string `json:"commit,omitempty"`
	Branch  string `json:"branch,omitempty"`
	// Build is the one-wheel form of Wheels, kept for jobs written
	// before wheels: Normalize moves it into Wheels.
	Build Build `json:"build,omitzero"`
	// Wheels are the build under test: the worker installs them into an
	// environment of their own (python -m venv --system-site-packages)
	// and runs the test tree of Repo at Commit with it. Without wheels the
	// job runs the host's installed build, and Commit is only a label.
	Wheels []Wheel `json:"wheels,omitempty"`
	// CIRunID is the CI run that submitted the job (GitHub Actions'
	// GITHUB_RUN_ID); absent (0) outside CI.
	CIRunID int64 `json:"ci_run_id,omitempty"`
	// CIRunURL links to that run
	// ($GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID).
	CIRunURL string `json:"ci_run_url,omitempty"`
}

// Build points at one prebuilt wheel of the source (see Source.Wheels).
type Build struct {
	URL    string `json:"url,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// Limits bound a job.
type Limits struct {
	// Timeout bounds one attempt; 0 = the worker's default.
	Timeout Duration `json:"timeout,omitzero"`
	// PCCMin is the required PCC. 0 (absent) leaves the judgement to the
	// runner: an upstream harness judges its own accuracy check at the
	// PCC it requires of that model (tt-xla: 0.97, 0.90 for some models),
	// a built-in runner at DefaultPCCMin. A job that sets it is judged at
	// it as well: the harness's own check must pass and the PCC must reach
	// pcc_min.
	PCCMin float64 `json:"pcc_min,omitempty"`
}

// Duration is a time.Duration that reads and writes JSON as "30m".
type Duration time.Duration

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("duration must be a string like \"30m\" or seconds")
	}
	*d = Duration(time.Duration(secs * float64(time.Second)))
	return nil
}

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

var (
	// dir/test_x.py[::Class]::test_y[param id]: a relative path, then
	// names, then an optional parametrization id in brackets that may hold
	// spaces and a few punctuation characters (upstream ids look like
	// "test_resnet50[resnet_50_hf]"). No shell ever sees it: runners pass it as
	// one argv element.
	testPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_./-]*\.py(::[A-Za-z_][A-Za-z0-9_]*)*(\[[A-Za-z0-9_ .,:+=/-]{1,128}\])?$`)
)

// Normalize fills the defaults of an otherwise valid job: schema, runner by
// pool (DefaultRunner), priority normal, data format bfloat16, warmup
// min(32, loop count). Every entry point calls it: submit (matrix
// expansion) and the worker (DecodeQueuedJob), so a hand-written job gets
// exactly the defaults a submitted one has.
func (j *Job) Normalize() {
	if j.Schema == "" {
		j.Schema = SchemaJob
	}
	if j.Runner == "" {
		j.Runner = DefaultRunner(j.Pool)
	}
	if j.Priority == "" {
		j.Priority = PriorityNormal
	}
	if j.Benchmark.DataFormat == "" {
		j.Benchmark.DataFormat = FormatBfloat16
	}
	if j.Benchmark.WarmupCount == 0 && j.Benchmark.LoopCount > 0 {
		j.Benchmark.WarmupCount = min(32, j.Benchmark.LoopCount)
	}
	if b := j.Source.Build; b != (Build{}) && len(j.Source.Wheels) == 0 {
		j.Source.Wheels = []Wheel{{URL: b.URL, SHA256: b.SHA256}}
		j.Source.Build = Build{}
	}
}

// Validate checks every field and returns the first *FieldError found (it
// matches ErrInvalid). It does not know which models a runner has; the
// worker asks the runner for that.
func (j *Job) Validate() error {
	if j.Schema != SchemaJob {
		return fieldErr("schema", "must be %q (got %q)", SchemaJob, truncate(j.Schema, 40))
	}
	if err := ValidID("id", j.ID); err != nil {
		return err
	}
	if err := ValidID("run", j.Run); err != nil {
		return err
	}
	if j.CreatedAt.IsZero() {
		return fieldErr("created_at", "is required")
	}
	if !ValidPool(j.Pool) {
		return fieldErr("pool", "must be one of %s (got %q)", strings.Join(Pools, ", "), truncate(j.Pool, 40))
	}
	if !j.Priority.Valid() {
		return fieldErr("priority", "must be high, normal or low (got %q)", truncate(string(j.Priority), 40))
	}
	if !ValidRunnerName(j.Runner) {
		return fieldErr("runner", "must be a runner name like forge, tt-xla, cpu or sim (got %q)", truncate(j.Runner, 40))
	}
	if err := j.Benchmark.Validate(); err != nil {
		return err
	}
	if err := j.Source.validate(); err != nil {
		return err
	}
	if t := j.Limits.Timeout.D(); t < 0 || t > MaxJobTimeout {
		return fieldErr("limits.timeout", "must be between 0 and %s", MaxJobTimeout)
	}
	if p := j.Limits.PCCMin; p < 0 || p > 1 || p != p {
		return fieldErr("limits.pcc_min", "must be between 0 and 1")
	}
	if j.Repeat < 0 || j.Repeat > MaxRepeat {
		return fieldErr("repeat", "must be between 0 and %d (got %d)", MaxRepeat, j.Repeat)
	}
	if len(j.Avoid) > MaxAvoid {
		return fieldErr("avoid", "must name at most %d boards (got %d)", MaxAvoid, len(j.Avoid))
	}
	for _, b := range j.Avoid {
		if b == "" || len(b) > 2*MaxIDLen+1 || !shaped(b, classAlnum, classBoard, 0) {
			return fieldErr("avoid", "must hold board names like worker/device (got %q)", truncate(b, 40))
		}
	}
	return ValidateLabels(j.Labels)
}

// ValidTestID reports whether id is a pytest node id a runner may pass to
// the harness: a relative path to a .py file without "..", optional
// "::name" parts and an optional "[param id]" (which may hold spaces), at
// most 256 bytes, no leading '-' (never taken for an option).
func ValidTestID(id string) bool {
	if len(id) > 256 || !testPattern.MatchString(id) || strings.Contains(id, "..") {
		return false
	}
	path, _, _ := strings.Cut(id, "::")
	return !strings.HasPrefix(path, "/") && !strings.Contains(path, "//")
}

// Validate checks the benchmark fields (see Job.Validate).
func (b *Benchmark) Validate() error {
	if !shaped(b.Model, classLowerDigit, classModel, 64) { // ^[a-z0-9][a-z0-9_.-]{0,63}$
		return fieldErr("benchmark.model", "must match [a-z0-9][a-z0-9_.-]* up to 64 characters (got %q)", truncate(b.Model, 40))
	}
	if b.Test != "" && !ValidTestID(b.Test) {
		return fieldErr("benchmark.test", "must be a relative pytest node id like dir/test_x.py::test_y[param id] without '..' (got %q)", truncate(b.Test, 60))
	}
	if err := positive("benchmark.batch_size", b.BatchSize, MaxBatchSize); err != nil {
		return err
	}
	if err := positive("benchmark.loop_count", b.LoopCount, MaxLoopCount); err != nil {
		return err
	}
	if err := positive("benchmark.warmup_count", b.WarmupCount, MaxWarmupCount); err != nil {
		return err
	}
	if b.DataFormat != FormatFloat32 && b.DataFormat != FormatBfloat16 {
		return fieldErr("benchmark.data_format", "must be float32 or bfloat16 (got %q)", truncate(b.DataFormat, 40))
	}
	if b.InputSize < 0 || b.InputSize > MaxInputSize {
		return fieldErr("benchmark.input_size", "must be between 0 (model default) and %d", MaxInputSize)
	}
	return nil
}

func (s *Source) validate() error {
	if s.CIRunID < 0 {
		return fieldErr("source.ci_run_id", "must be a positive run id (got %d)", s.CIRunID)
	}
	for _, f := range []struct{ name, v string }{
		{"source.project", s.Project}, {"source.repo", s.Repo}, {"source.commit", s.Commit},
		{"source.branch", s.Branch}, {"source.build.url", s.Build.URL}, {"source.build.sha256", s.Build.SHA256},
		{"source.ci_run_url", s.CIRunURL},
	} {
		if len(f.v) > 512 {
			return fieldErr(f.name, "must be at most 512 characters")
		}
		if hasControl(f.v) {
			return fieldErr(f.name, "must be UTF-8 without control characters")
		}
	}
	if len(s.Wheels) == 0 {
		return nil
	}
	if s.Build != (Build{}) {
		return fieldErr("source.build", "must be absent when source.wheels is set (it is the one-wheel form of wheels)")
	}
	if len(s.Wheels) > MaxWheels {
		return fieldErr("source.wheels", "must have at most %d wheels (got %d)", MaxWheels, len(s.Wheels))
	}
	seen := map[string]bool{}
	for i, w := range s.Wheels {
		if err := w.validate(fmt.Sprintf("source.wheels[%d]", i)); err != nil {
			return err
		}
		if seen[w.Name()] {
			return fieldErr(fmt.Sprintf("source.wheels[%d].url", i), "names wheel %s twice", w.Name())
		}
		seen[w.Name()] = true
	}
	if s.Repo == "" {
		return fieldErr("source.repo", "is required with source.wheels (the test tree to run the build with)")
	}
	if !ValidCommit(s.Commit) {
		return fieldErr("source.commit", "must be a full commit id (40 or 64 lowercase hex digits) with source.wheels (got %q)", truncate(s.Commit, 70))
	}
	return nil
}

// ValidateLabels checks label keys ([A-Za-z0-9_.-], up to 64) and values (up
// to 512 bytes, no control characters), at most 64 labels.
func ValidateLabels(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return fieldErr("labels", "must have at most %d entries", MaxLabels)
	}
	for k, v := range labels {
		if len(k) > MaxLabelKey || !shaped(k, classLabelKey, classLabelKey, 0) {
			return fieldErr("labels", "key %q must match [A-Za-z0-9_.-]+ up to %d characters", truncate(k, 40), MaxLabelKey)
		}
		if len(v) > MaxLabelValue || hasControl(v) {
			return fieldErr("labels."+k, "must be at most %d bytes of UTF-8 without control characters", MaxLabelValue)
		}
	}
	return nil
}

// hasControl reports whether s is not valid UTF-8 or holds a control
// character (C0 including tab and newline, DEL, C1).
func hasControl(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

// Cell is the canonical text of the job's content: everything its result
// depends on besides the run (the matrix cell, its limits and its source).
// Only the id, created_at and priority are left out. JobID hashes it, so a
// job's id binds its content (CheckID).
func (j *Job) Cell() string {
	return string(j.appendCell(make([]byte, 0, 256)))
}

// appendCell appends the cell to b. It writes exactly what
//
//	fmt.Sprintf("pool=%s runner=%s test=%s model=%s batch=%d loop=%d warmup=%d format=%s training=%t input=%d", ...)
//	+ fmt.Sprintf(" timeout=%s pcc_min=%s", timeout, strconv.FormatFloat(pcc_min, 'g', -1, 64))
//	+ fmt.Sprintf(" repeat=%d", repeat) when the job is a confirmation repeat (Repeat > 0)
//	+ fmt.Sprintf(" source=%q,%q,%q,%q,%q,%q", project, repo, commit, branch, build url, build sha256)
//	+ fmt.Sprintf(" wheel=%q:%s", url, sha256) for each wheel in order
//	+ fmt.Sprintf(" label.%s=%q", k, v) for each label in key order
//
// writes (the form every job id hashes; TestCellForm keeps it so), without fmt's reflection: a cell is made for every job a submit
// publishes and every job a worker checks.
func (j *Job) appendCell(b []byte) []byte {
	b = append(b, "pool="...)
	b = append(b, j.Pool...)
	b = append(b, " runner="...)
	b = append(b, j.Runner...)
	b = append(b, " test="...)
	b = append(b, j.Benchmark.Test...)
	b = append(b, " model="...)
	b = append(b, j.Benchmark.Model...)
	b = append(b, " batch="...)
	b = strconv.AppendInt(b, int64(j.Benchmark.BatchSize), 10)
	b = append(b, " loop="...)
	b = strconv.AppendInt(b, int64(j.Benchmark.LoopCount), 10)
	b = append(b, " warmup="...)
	b = strconv.AppendInt(b, int64(j.Benchmark.WarmupCount), 10)
	b = append(b, " format="...)
	b = append(b, j.Benchmark.DataFormat...)
	b = append(b, " training="...)
	b = strconv.AppendBool(b, j.Benchmark.Training)
	b = append(b, " input="...)
	b = strconv.AppendInt(b, int64(j.Benchmark.InputSize), 10)
	b = append(b, " timeout="...)
	b = append(b, j.Limits.Timeout.D().String()...)
	b = append(b, " pcc_min="...)
	b = strconv.AppendFloat(b, j.Limits.PCCMin, 'g', -1, 64)
	if j.Repeat > 0 {
		b = append(b, " repeat="...)
		b = strconv.AppendInt(b, int64(j.Repeat), 10)
	}
	b = append(b, " source="...)
	for i, v := range []string{j.Source.Project, j.Source.Repo, j.Source.Commit, j.Source.Branch, j.Source.Build.URL, j.Source.Build.SHA256} {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, v)
	}
	for _, w := range j.Source.Wheels {
		b = append(b, " wheel="...)
		b = strconv.AppendQuote(b, w.URL)
		b = append(b, ':')
		b = append(b, w.SHA256...)
	}
	switch len(j.Labels) {
	case 0:
	case 1:
		for k, v := range j.Labels {
			b = appendLabel(b, k, v)
		}
	default:
		keys := make([]string, 0, len(j.Labels))
		for k := range j.Labels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = appendLabel(b, k, j.Labels[k])
		}
	}
	return b
}

func appendLabel(b []byte, k, v string) []byte {
	b = append(b, " label."...)
	b = append(b, k...)
	b = append(b, '=')
	return strconv.AppendQuote(b, v)
}

// CellID returns the job's cell and the id of its run and cell
// (JobID(j.Run, cell)), making the cell once for both.
func (j *Job) CellID() (cell, id string) {
	b := make([]byte, 0, 256)
	b = append(b, j.Run...)
	b = append(b, 0)
	n := len(b)
	b = j.appendCell(b)
	h := sha256.Sum256(b)
	return string(b[n:]), "j" + hex.EncodeToString(h[:8])
}

// CheckID reports whether the job's id is the deterministic id of its run
// and content (JobID(run, Cell())). A job that fails it was not submitted
// as it is (a forgery reusing another job's id, or an edit after the id
// was made): it must not record a result under that id. The error matches
// ErrInvalid and names the field id.
func (j *Job) CheckID() error {
	_, want := j.CellID()
	return j.checkID(want)
}

// checkID is CheckID with the job's content id already made.
func (j *Job) checkID(want string) error {
	if j.ID != want {
		return fieldErr("id", "is not the id of the job's run and content (%q has content id %s): a job's id must be protocol.JobID(run, cell)", truncate(j.ID, 40), want)
	}
	return nil
}

// DecodeJob strictly decodes and validates a job: unknown fields, trailing
// data, a wrong schema and any invalid field are errors matching ErrInvalid.
// It does not fill defaults; a published job is already normalized.
func DecodeJob(data []byte) (*Job, error) { return decodeJob(data, nil) }

// decodeJob is DecodeJob with fill, when not nil, applied between decoding
// and validation.
func decodeJob(data []byte, fill func(*Job)) (*Job, error) {
	if len(data) > MaxJobBytes {
		return nil, fieldErr("payload", "is %d bytes, over the %d byte limit", len(data), MaxJobBytes)
	}
	var j Job
	if err := checkStrict(data, reflect.TypeFor[Job]()); err != nil {
		return nil, &decodeError{kind: "job", err: err}
	}
	if err := decodeStrict(data, &j); err != nil {
		return nil, &decodeError{kind: "job", err: err}
	}
	if fill != nil {
		fill(&j)
	}
	if err := j.Validate(); err != nil {
		return &j, err
	}
	return &j, nil
}

// decodeStrict decodes exactly one JSON value, rejecting unknown fields.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON object")
	}
	return nil
}

func positive(field string, v, max int) error {
	if v <= 0 {
		return fieldErr(field, "must be a positive integer (got %d)", v)
	}
	if v > max {
		return fieldErr(field, "must be at most %d (got %d)", max, v)
	}
	return nil
}

func oneOf(s string, set []string) bool {
	for _, v := range set {
		if v == s {
			return true
		}
	}
	return false
}
