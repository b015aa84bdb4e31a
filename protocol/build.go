package protocol

import (
	"strings"
)

// Builds in the store. A wheel the job measures is stored once under its
// content: BuildPrefix + "sha256/<hex>/<file name>" (docs/SCHEMA.md, "Storage layout"), written
// once and never overwritten, so the key names its bytes.
const (
	BuildPrefix = "builds/"
	// MaxWheels bounds the wheels one job installs.
	MaxWheels = 16
	// MaxWheelName bounds a wheel's file name.
	MaxWheelName = 200
)

// Wheel is one wheel a job installs into the environment it runs in: a
// store key (BuildKey) and the sha256 of its bytes.
type Wheel struct {
	URL    string `json:"url"`
	SHA256 string `json:"sha256"`
}

// Name is the wheel's file name (the key's last element).
func (w Wheel) Name() string { return w.URL[strings.LastIndexByte(w.URL, '/')+1:] }

// BuildKey is the store key of a wheel named name with the given sha256
// (lowercase hex).
func BuildKey(sha256Hex, name string) string {
	return BuildPrefix + "sha256/" + sha256Hex + "/" + name
}

// ValidSHA256 reports whether s is a sha256 in lowercase hex.
func ValidSHA256(s string) bool { return len(s) == 64 && lowerHex(s) }

// ValidCommit reports whether s is a full git object name (40 hex digits
// for SHA-1 repositories, 64 for SHA-256), lowercase: a build's test tree
// is fetched by it, and a mirror cannot fetch an abbreviation.
func ValidCommit(s string) bool { return (len(s) == 40 || len(s) == 64) && lowerHex(s) }

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ParseBuildKey splits a wheel's store key builds/sha256/<hex>/<name>.whl
// (BuildKey) into the sha256 it names and the wheel's file name; ok is
// false for any other key.
func ParseBuildKey(key string) (sha256Hex, name string, ok bool) {
	rest, ok1 := strings.CutPrefix(key, BuildPrefix+"sha256/")
	sha256Hex, name, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 || !ValidSHA256(sha256Hex) || !ValidWheelName(name) {
		return "", "", false
	}
	return sha256Hex, name, true
}

// ValidWheelName reports whether n is a wheel file name a job may name in
// source.wheels: PEP 427's name-version(-build)?-python-abi-platform.whl
// of letters, digits and . _ - +, at most MaxWheelName bytes.
func ValidWheelName(n string) bool {
	if n == "" || len(n) > MaxWheelName || !strings.HasSuffix(n, ".whl") || strings.Count(n, "-") < 4 || n[0] == '.' || n[0] == '-' {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '+') {
			return false
		}
	}
	return true
}

func (w Wheel) validate(field string) error {
	if !ValidSHA256(w.SHA256) {
		return fieldErr(field+".sha256", "must be a sha256 in lowercase hex (got %q)", truncate(w.SHA256, 70))
	}
	hexPart, _, ok := ParseBuildKey(w.URL)
	if !ok {
		return fieldErr(field+".url", "must be a store key builds/sha256/<hex>/<name>.whl (got %q)", truncate(w.URL, 120))
	}
	if hexPart != w.SHA256 {
		return fieldErr(field+".url", "names sha256 %s but the wheel's sha256 is %s", truncate(hexPart, 70), w.SHA256)
	}
	return nil
}

// Build kinds (BuildInfo.Kind).
const (
	// BuildProvisioned: the worker installed the job's wheels into an
	// environment of their own and ran the job's commit's test tree.
	BuildProvisioned = "provisioned"
	// BuildHost: the job ran what the host has installed (its configured
	// checkout and interpreter); a commit it names is only a label.
	BuildHost = "host"
)

// Build cache outcomes (BuildInfo.Cache).
const (
	CacheHit  = "hit"
	CacheMiss = "miss"
)

// BuildInfo says what a result measured: the job's provisioned build or
// the host's.
type BuildInfo struct {
	Kind string `json:"kind"`
	// Commit is the test tree's commit (provisioned) or the commit the job
	// named (host: a label only).
	Commit string      `json:"commit,omitempty"`
	Wheels []WheelInfo `json:"wheels,omitempty"`
	// Cache says whether the environment was ready (hit) or made for this
	// job (miss); provisioned builds only.
	Cache string `json:"cache,omitempty"`
	// SetupS is how long provisioning took (also Phases.SetupS).
	SetupS float64 `json:"setup_s,omitempty"`
}

// WheelInfo names one installed wheel.
type WheelInfo struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}
