package harness_test

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/device/harness"
)

// testdata/resnet50_report.json is what harnesstest's tt-forge-onnx tree
// (built from tt-forge-onnx's forge/test/benchmark sources) writes for
// test_resnet50[resnet_50_hf] at batch 8, loop 128, with total_time and
// pcc set to round values and device_name to a lab host.
func TestParseReportFixture(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/resnet50_report.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := harness.ParseReport(data)
	if err != nil {
		t.Fatal(err)
	}
	samples, seconds := int64(1024), 2.0483
	if r.TotalSamples() != samples || r.TotalTime() != seconds || r.SamplesPerSec() != float64(samples)/seconds {
		t.Errorf("samples %d time %v sps %v", r.TotalSamples(), r.TotalTime(), r.SamplesPerSec())
	}
	if r.PCC == nil || *r.PCC != 0.9934 || r.DeviceInfo.Arch != "wormhole" || r.DeviceInfo.DeviceType != "n150" {
		t.Errorf("report %+v", r)
	}
	if r.Model != "onnx_resnet_resnet_50_hf_cv_image_cls_hf" || r.ModelRawName != r.Model || r.Project != "tt-forge/tt-forge-onnx" || r.BatchSize != 8 || r.Precision != "bfloat16" || r.ImageDim != "3x224x224" {
		t.Errorf("report %+v", r)
	}
}

func TestParseReportRejects(t *testing.T) {
	t.Parallel()
	ok := func(ts, tt string) string {
		return `{"measurements":[{"measurement_name":"total_samples","value":` + ts +
			`},{"measurement_name":"total_time","value":` + tt + `}],"pcc":0.99}`
	}
	if _, err := harness.ParseReport([]byte(ok("128", "1.5"))); err != nil {
		t.Fatalf("minimal report: %v", err)
	}
	for name, tc := range map[string]struct{ in, want string }{
		"empty":            {"", "empty"},
		"not an object":    {`[1,2]`, "not a JSON object"},
		"garbage":          {"Traceback (most recent call last):", "not a JSON object"},
		"truncated":        {`{"measurements":[{"measurement_name":"total_samples"`, "unexpected EOF"},
		"trailing":         {ok("1", "1") + `{}`, "trailing"},
		"no measurements":  {`{"pcc":0.99}`, "measurements: missing"},
		"wrong type":       {`{"measurements":"x"}`, "measurements"},
		"value string":     {ok(`"128"`, "1"), "measurements.value"},
		"no samples":       {`{"measurements":[{"measurement_name":"total_time","value":1}]}`, "total_samples"},
		"no time":          {`{"measurements":[{"measurement_name":"total_samples","value":1}]}`, "total_time"},
		"zero time":        {ok("128", "0"), "total_time"},
		"negative time":    {ok("128", "-1"), "total_time"},
		"fraction samples": {ok("12.5", "1"), "total_samples"},
		"zero samples":     {ok("0", "1"), "total_samples"},
		"nan":              {ok("128", "NaN"), "NaN"},
		"unnamed":          {`{"measurements":[{"value":1}]}`, "measurement_name"},
		"pcc out of range": {strings.Replace(ok("1", "1"), `"pcc":0.99`, `"pcc":1.5`, 1), "pcc"},
		"pcc string":       {strings.Replace(ok("1", "1"), `"pcc":0.99`, `"pcc":"0.99"`, 1), "pcc"},
		"arch number":      {strings.Replace(ok("1", "1"), `"pcc":0.99`, `"device_info":{"arch":3}`, 1), "device_info.arch"},
	} {
		_, err := harness.ParseReport([]byte(tc.in))
		if err == nil || !errors.Is(err, harness.ErrReport) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want ErrReport mentioning %q", name, err, tc.want)
		}
	}
}

func FuzzParseReport(f *testing.F) {
	if data, err := os.ReadFile("testdata/resnet50_report.json"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"measurements":[{"measurement_name":"total_samples","value":128},{"measurement_name":"total_time","value":1.5}],"pcc":0.99}`))
	f.Add([]byte(`{"measurements":[]}`))
	f.Add([]byte(`{"measurements":[{"measurement_name":"total_time","value":1e-300},{"measurement_name":"total_samples","value":9007199254740992}]}`))
	f.Add([]byte(`{"pcc": NaN}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := harness.ParseReport(data)
		if err != nil {
			if !errors.Is(err, harness.ErrReport) {
				t.Fatalf("error %v does not match ErrReport", err)
			}
			return
		}
		if r.TotalSamples() <= 0 || !(r.TotalTime() > 0) {
			t.Fatalf("accepted report with samples %d time %v", r.TotalSamples(), r.TotalTime())
		}
		if sps := r.SamplesPerSec(); math.IsNaN(sps) || sps <= 0 {
			t.Fatalf("accepted report with samples/sec %v", sps)
		}
		if r.PCC != nil && (*r.PCC < -1 || *r.PCC > 1) {
			t.Fatalf("accepted pcc %v", *r.PCC)
		}
	})
}
