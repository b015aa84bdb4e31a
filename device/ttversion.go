package device

import (
	"slices"
	"strconv"
	"strings"
)

// Upstream versions where the way a board is named changed.
//
// tt-umd reads TT_VISIBLE_DEVICES as /dev/tenstorrent/<N> numbers up to
// 0.9.1; 0.9.2 added PCI addresses (BDFs) there and 0.9.3 made a bare
// integer a logical id (the position in the BDF-sorted device list). A
// BDF names the same board in both, so benchfleet sets BDFs unless the
// host's tt-umd is known to be older than 0.9.2.
//
// tt-smi up to 3.x (the luwen backend) reads `-r N` as /dev/tenstorrent/N
// and takes nothing else but a reset config file. tt-smi 5 reads `-r N` as
// a UMD logical id and also takes BDFs and /dev/tenstorrent/<N> paths (one
// kind per invocation); an id it does not have is skipped with a log line
// and it still exits 0. tt-smi 4 moved to the UMD backend; whether its -r
// takes BDFs is read from its --help.
var (
	umdVisibleBDFs   = version{0, 9, 2}
	smiResetTargets  = version{5, 0, 0}
	smiResetUMDFirst = version{4, 0, 0}
)

// version is a major.minor.patch release number.
type version struct{ major, minor, patch int }

func (v version) less(w version) bool {
	if v.major != w.major {
		return v.major < w.major
	}
	if v.minor != w.minor {
		return v.minor < w.minor
	}
	return v.patch < w.patch
}

func (v version) String() string {
	return strconv.Itoa(v.major) + "." + strconv.Itoa(v.minor) + "." + strconv.Itoa(v.patch)
}

// maxVersionText bounds the text parseVersion looks at (a --version line,
// a host_sw_vers value).
const maxVersionText = 256

// parseVersion reads the release number in a version text as tt-smi and
// tt-umd print it: "6.3.0", "3.0.15", "v4.1.2", "tt-smi 5.0.1",
// "0.9.3.dev12+g1a2b", "4.0.0rc1". It takes the first whitespace-separated
// word that starts with a digit (after an optional "v"); minor and patch
// default to 0; anything after the number is ignored. ok is false when no
// word holds a number or a part has more than 6 digits.
func parseVersion(s string) (v version, ok bool) {
	if len(s) > maxVersionText {
		s = s[:maxVersionText]
	}
	for _, word := range strings.Fields(s) {
		if len(word) > 1 && (word[0] == 'v' || word[0] == 'V') {
			word = word[1:]
		}
		if !isDigit(word, 0) {
			continue
		}
		var parts [3]int
		for i := range parts {
			n := 0
			for isDigit(word, n) {
				n++
			}
			if n > 6 {
				return version{}, false
			}
			parts[i], _ = strconv.Atoi(word[:n])
			word = word[n:]
			// Go on only at a dot followed by a digit ("3.0.15rc1", not "4.").
			if len(word) < 2 || word[0] != '.' || !isDigit(word, 1) {
				break
			}
			word = word[1:]
		}
		return version{parts[0], parts[1], parts[2]}, true
	}
	return version{}, false
}

func isDigit(s string, i int) bool { return i < len(s) && s[i] >= '0' && s[i] <= '9' }

// VisibleDevices is the TT_VISIBLE_DEVICES value of a board with device
// nodes nodes and PCI addresses bdfs (in nodes order), on a host whose
// tt-smi snapshot reported software (host_sw_vers; nil when unknown): the
// comma-joined BDFs, or the comma-joined node numbers when the BDFs are
// not all known or the snapshot names a tt-umd older than 0.9.2, which
// reads only node numbers there. An unknown tt-umd gets BDFs. The tt-umd
// in the snapshot is tt-smi's; a harness that bundles another should be
// configured with the same.
func VisibleDevices(nodes []int, bdfs []string, software map[string]string) string {
	if len(bdfs) == 0 || len(bdfs) != len(nodes) || slices.Contains(bdfs, "") {
		return joinInts(nodes)
	}
	if v, ok := parseVersion(software["tt_umd"]); ok && v.less(umdVisibleBDFs) {
		return joinInts(nodes)
	}
	return strings.Join(bdfs, ",")
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// resetForm is how a tt-smi's `-r` names a board.
type resetForm int

const (
	// resetFormUnknown: not determined yet.
	resetFormUnknown resetForm = iota
	// resetByIndex: `-r N[,M]` with device node numbers (tt-smi < 4, and
	// tt-smi 4 builds whose -r takes no BDF).
	resetByIndex
	// resetByTarget: `-r BDF[,BDF]` (or /dev/tenstorrent/<N> paths when the
	// BDFs are unknown); a bare integer would be a UMD logical id.
	resetByTarget
)

func (f resetForm) String() string {
	switch f {
	case resetByIndex:
		return "device node number"
	case resetByTarget:
		return "PCI address"
	}
	return "unknown"
}

// resetFormOf is the form tt-smi version v's -r takes; resetFormUnknown
// for 4.x and unparseable versions, which are asked for their --help.
func resetFormOf(v version, ok bool) resetForm {
	switch {
	case !ok:
		return resetFormUnknown
	case !v.less(smiResetTargets):
		return resetByTarget
	case v.less(smiResetUMDFirst):
		return resetByIndex
	}
	return resetFormUnknown
}

// resetFormFromHelp reads tt-smi's --help: an -r that mentions BDFs
// takes targets, else device node numbers.
func resetFormFromHelp(help string) resetForm {
	if strings.Contains(strings.ToUpper(help), "BDF") {
		return resetByTarget
	}
	return resetByIndex
}

// resetArgument is the `-r` argument naming dev's board in form.
func resetArgument(form resetForm, dev Device, nodes []int) string {
	if form == resetByIndex {
		return joinInts(nodes)
	}
	if len(dev.BDFs) > 0 && len(dev.BDFs) == len(nodes) && !slices.Contains(dev.BDFs, "") {
		return strings.Join(dev.BDFs, ",")
	}
	paths := make([]string, len(nodes))
	for i, n := range nodes {
		paths[i] = "/dev/tenstorrent/" + strconv.Itoa(n)
	}
	return strings.Join(paths, ",")
}
