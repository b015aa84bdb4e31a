package sim

import (
	"maps"

	"github.com/benchfleet/benchfleet/protocol"
)

// LabelRepeatSamplesPerSec is the throughput a confirmation repeat of the
// job (protocol.Job.Repeat above 0) reports instead of
// LabelSamplesPerSec: a regression a rerun does not reproduce.
const LabelRepeatSamplesPerSec = "sim.repeat_samples_per_sec"

// labelsOf are the labels job runs by: its own, with
// LabelRepeatSamplesPerSec in place of LabelSamplesPerSec for a repeat.
func labelsOf(job *protocol.Job) map[string]string {
	v, ok := job.Labels[LabelRepeatSamplesPerSec]
	if !ok || job.Repeat == 0 {
		return job.Labels
	}
	l := maps.Clone(job.Labels)
	l[LabelSamplesPerSec] = v
	return l
}
