package producer

import "fmt"

// String is the event as a progress line for people, e.g. "wheel
// x-1.0-py3-none-any.whl (812.4 MiB): uploaded"; "" for an unknown state.
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
