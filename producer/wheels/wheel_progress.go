package wheels

import (
	"fmt"
	"github.com/benchfleet/benchfleet/producer/runstate"
)

// String is the event as a progress line for people, e.g. "wheel
// x-1.0-py3-none-any.whl (812.4 MiB): uploaded" or "build of commit
// 3f2a9c01b4de: recorded at builds/commits/<commit>.json (a bisect
// measures it)"; "" for an unknown state.
func (e WheelEvent) String() string {
	switch e.State {
	case WheelUploading:
		if e.Done == 0 {
			return fmt.Sprintf("wheel %s (%s): uploading to %s", e.Name, sizeText(e.Size), e.Key)
		}
		return fmt.Sprintf("wheel %s: %d%% (%s of %s)", e.Name, e.Done*100/max(e.Size, 1), sizeText(e.Done), sizeText(e.Size))
	case WheelUploaded:
		return fmt.Sprintf("wheel %s (%s): uploaded", e.Name, sizeText(e.Size))
	case WheelPresent:
		return fmt.Sprintf("wheel %s (%s): already in the store at %s", e.Name, sizeText(e.Size), e.Key)
	case WheelFound:
		return fmt.Sprintf("wheel %s: in the store at %s", e.Name, e.Key)
	case BuildRecorded:
		return fmt.Sprintf("build of commit %s: recorded at %s (a bisect measures it)", runstate.ShortCommit(e.Name), e.Key)
	case BuildRecordKept:
		return fmt.Sprintf("build of commit %s: not recorded: %s (a bisect measures the recorded one)", runstate.ShortCommit(e.Name), e.Reason)
	case BuildNotRecorded:
		return fmt.Sprintf("build of commit %s: not recorded: %s (a bisect measures baseline builds only)", runstate.ShortCommit(e.Name), e.Reason)
	case BuildRecordFailed:
		return fmt.Sprintf("build of commit %s: not recorded: %s (the submit goes on; a bisect will skip the commit)", runstate.ShortCommit(e.Name), e.Reason)
	}
	return ""
}

// sizeText is a byte count for people: 812.4 MiB.
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
