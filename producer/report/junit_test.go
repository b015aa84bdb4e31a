package report

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// sampleReport is a run of four jobs: a regression, a PCC failure, an
// infrastructure error and a passing job.
func sampleReport(t *testing.T) *gate.RunReport {
	t.Helper()
	cfg, err := gate.GateConfig{}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	f := func(v float64) *float64 { return &v }
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	m := &protocol.RunManifest{Run: "ci-fleet-abc", CreatedAt: now, Priority: protocol.PriorityHigh,
		Source: protocol.Source{Repo: "acme/fleet", Commit: "abcdef0123456789", Branch: "feature|x"}}
	rows := []runstate.Row{
		{Job: "j1", Model: "resnet50", Pool: "n150", Runner: "forge", BatchSize: 8, DataFormat: "bfloat16",
			Status: protocol.StatusPassed, SamplesPerSec: 1000, PCC: 0.995},
		{Job: "j2", Model: "resnet50", Pool: "n150", Runner: "forge", BatchSize: 1, DataFormat: "float32",
			Status: protocol.StatusFailed, SamplesPerSec: 100, PCC: 0.42, Reason: "pcc 0.42 < 0.99 <golden>\nstack..."},
		{Job: "j3", Model: "mlp", Pool: "cpu", Runner: "cpu", BatchSize: 32, DataFormat: "bfloat16",
			Status: protocol.StatusError, Reason: "device vanished"},
		{Job: "j4", Model: "resnet50", Pool: "p150", Runner: "forge", BatchSize: 8, DataFormat: "bfloat16",
			Status: protocol.StatusPassed, SamplesPerSec: 900, PCC: 0.996},
	}
	v := []gate.GateRow{
		{Job: "j1", Model: "resnet50", Pool: "n150", BatchSize: 8, DataFormat: "bfloat16", Baseline: f(1001), Value: 1000, Change: f(-0.001), Verdict: gate.VerdictOK, History: 10, Band: 20},
		{Job: "j2", Model: "resnet50", Pool: "n150", BatchSize: 1, DataFormat: "float32", Value: 100, Verdict: gate.VerdictFailed},
		{Job: "j3", Model: "mlp", Pool: "cpu", BatchSize: 32, DataFormat: "bfloat16", Verdict: gate.VerdictFailed},
		{Job: "j4", Model: "resnet50", Pool: "p150", BatchSize: 8, DataFormat: "bfloat16", Baseline: f(1000), Value: 900, Change: f(-0.1), Verdict: gate.VerdictRegression, History: 10, Band: 25},
	}
	gate.ApplyVerdicts(rows, v)
	return &gate.RunReport{Manifest: m, Rows: rows, Verdicts: v, Gate: cfg, GateOn: true}
}

type xSuites struct {
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Suites   []xSuite `xml:"testsuite"`
}

type xSuite struct {
	Name     string  `xml:"name,attr"`
	Tests    int     `xml:"tests,attr"`
	Failures int     `xml:"failures,attr"`
	Errors   int     `xml:"errors,attr"`
	Cases    []xCase `xml:"testcase"`
}

type xCase struct {
	Name       string `xml:"name,attr"`
	Properties []struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	} `xml:"properties>property"`
	Failure *struct {
		Type    string `xml:"type,attr"`
		Message string `xml:"message,attr"`
	} `xml:"failure"`
	Error *struct {
		Type string `xml:"type,attr"`
	} `xml:"error"`
}

func (c xCase) prop(name string) string {
	for _, p := range c.Properties {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

func TestWriteJUnit(t *testing.T) {
	t.Parallel()
	r := sampleReport(t)
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	var doc xSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, buf.String())
	}
	if doc.Tests != 4 || doc.Failures != 2 || doc.Errors != 1 || len(doc.Suites) != 1 {
		t.Fatalf("counts tests=%d failures=%d errors=%d suites=%d, want 4 2 1 1", doc.Tests, doc.Failures, doc.Errors, len(doc.Suites))
	}
	s := doc.Suites[0]
	if s.Tests != 4 || s.Failures != 2 || s.Errors != 1 || !strings.Contains(s.Name, "ci-fleet-abc") {
		t.Fatalf("suite %+v", s)
	}
	byName := map[string]xCase{}
	for _, c := range s.Cases {
		byName[c.Name] = c
	}
	ok := byName["resnet50/n150/bs8/bfloat16"]
	if ok.Failure != nil || ok.Error != nil || ok.prop("samples_per_sec") != "1000.000" || ok.prop("pcc") != "0.995" || ok.prop("verdict") != "ok" {
		t.Errorf("passing case: %+v", ok)
	}
	pcc := byName["resnet50/n150/bs1/float32"]
	if pcc.Failure == nil || pcc.Failure.Type != "failed" || !strings.Contains(pcc.Failure.Message, "pcc 0.42") || strings.Contains(pcc.Failure.Message, "stack") {
		t.Errorf("pcc failure: %+v", pcc.Failure)
	}
	if e := byName["mlp/cpu/bs32/bfloat16"].Error; e == nil || e.Type != "error" {
		t.Errorf("infra error: %+v", e)
	}
	reg := byName["resnet50/p150/bs8/bfloat16"]
	if reg.Failure == nil || reg.Failure.Type != "regression" || !strings.Contains(reg.Failure.Message, "10.0% below the baseline 1000.0") {
		t.Errorf("regression: %+v", reg.Failure)
	}
	// With the gate off, the regression is reported but is not a failure.
	r.GateOn = false
	buf.Reset()
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	doc = xSuites{}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Failures != 1 {
		t.Errorf("gate off: %d failures, want 1 (the PCC failure only)", doc.Failures)
	}
}

func TestJUnitDuplicateNames(t *testing.T) {
	t.Parallel()
	rows := []runstate.Row{
		{Job: "ja", Model: "m", Pool: "sim", BatchSize: 1, DataFormat: "bfloat16", Status: protocol.StatusPassed},
		{Job: "jb", Model: "m", Pool: "sim", BatchSize: 1, DataFormat: "bfloat16", Status: protocol.StatusPassed},
	}
	n := gate.CaseNames(rows)
	if n[0] == n[1] || !strings.HasSuffix(n[1], "/jb") {
		t.Fatalf("names %v", n)
	}
}

func TestWriteMarkdown(t *testing.T) {
	t.Parallel()
	r := sampleReport(t)
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, r); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	// A failed job takes precedence over the regression.
	if !strings.HasPrefix(md, "## benchfleet run `ci-fleet-abc`: FAIL\n") || !strings.Contains(md, "**FAIL**: 4 jobs, 2 passed, 2 failed; 1 regression") {
		t.Fatalf("heading:\n%s", md)
	}
	var table []string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| model") && !strings.HasPrefix(l, "| ---") {
			table = append(table, l)
		}
	}
	if len(table) != 4 {
		t.Fatalf("table rows %d:\n%s", len(table), md)
	}
	wantOrder := []string{"| resnet50 | p150 | 8 |", "| resnet50 | n150 | 1 |", "| mlp | cpu | 32 |", "| resnet50 | n150 | 8 |"}
	for i, w := range wantOrder {
		if !strings.HasPrefix(table[i], w) {
			t.Errorf("table row %d = %q, want prefix %q (regressions, then failures, then the rest)", i, table[i], w)
		}
	}
	if !strings.Contains(table[0], "-10.0%") || !strings.Contains(table[0], "**regression**") {
		t.Errorf("regression row: %s", table[0])
	}
	if strings.Contains(md, "<golden>") || !strings.Contains(md, "branch `feature|x`") {
		t.Errorf("unescaped cell text:\n%s", md)
	}
	if !strings.Contains(md, "### Regressions\n\n- `resnet50/p150/bs8/bfloat16`") {
		t.Errorf("regressions list:\n%s", md)
	}
	// Without failures the outcome is REGRESSION; with the gate off, PASS.
	r.Rows = []runstate.Row{r.Rows[0], r.Rows[3]}
	buf.Reset()
	_ = WriteMarkdown(&buf, r)
	if !strings.Contains(buf.String(), ": REGRESSION\n") {
		t.Errorf("want REGRESSION:\n%s", buf.String())
	}
	r.GateOn = false
	buf.Reset()
	_ = WriteMarkdown(&buf, r)
	if !strings.Contains(buf.String(), ": PASS\n") || !strings.Contains(buf.String(), "gate off") {
		t.Errorf("want PASS with the gate off:\n%s", buf.String())
	}
}
