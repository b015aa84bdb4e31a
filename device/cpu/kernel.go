package cpu

// kernel is the micro-kernel in use: the portable Go one, replaced at init
// by an assembly one where the CPU supports it (see kernel_amd64.go; build
// with -tags purego to keep the Go kernel everywhere).
var kernel = kernelGo

// kernelName names the micro-kernel in use, for logs and benchmarks.
var kernelName = "go-16x6"
