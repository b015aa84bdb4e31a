package protocol

// ValidWheelName reports whether n is a wheel file name a job may name in
// source.wheels: PEP 427's name-version(-build)?-python-abi-platform.whl
// of letters, digits and . _ - +, at most MaxWheelName bytes.
func ValidWheelName(n string) bool { return n != "" && validWheelName(n) }
