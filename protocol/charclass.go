package protocol

// charClass is a set of ASCII bytes. The id, runner, model and label key
// rules are each "one byte of a first class, then bytes of a rest class",
// checked by shaped instead of a regexp: they run for every job a submit
// publishes and every job a worker decodes (regexp matching was a fifth of
// a 10,000-job submit's validation).
type charClass [256]bool

// classOf returns the class of the bytes in ranges, given as pairs of
// inclusive bounds ("az09" is a-z and 0-9) followed by single bytes after
// a '|' ("az09|_-").
func classOf(spec string) *charClass {
	var c charClass
	ranges, singles := spec, ""
	for i := 0; i < len(spec); i++ {
		if spec[i] == '|' {
			ranges, singles = spec[:i], spec[i+1:]
			break
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		for b := int(ranges[i]); b <= int(ranges[i+1]); b++ {
			c[b] = true
		}
	}
	for i := 0; i < len(singles); i++ {
		c[singles[i]] = true
	}
	return &c
}

// shaped reports whether s is one byte of first followed by bytes of rest,
// at most maxLen bytes in all (0: no limit).
func shaped(s string, first, rest *charClass, maxLen int) bool {
	if s == "" || (maxLen > 0 && len(s) > maxLen) || !first[s[0]] {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !rest[s[i]] {
			return false
		}
	}
	return true
}

var (
	classAlnum      = classOf("azAZ09")       // [A-Za-z0-9]
	classID         = classOf("azAZ09|_-")    // [A-Za-z0-9_-]
	classLower      = classOf("az")           // [a-z]
	classRunner     = classOf("az09|-")       // [a-z0-9-]
	classLowerDigit = classOf("az09")         // [a-z0-9]
	classModel      = classOf("az09|_.-")     // [a-z0-9_.-]
	classLabelKey   = classOf("azAZ09|_.-")   // [A-Za-z0-9_.-]
	classBoard      = classOf("azAZ09|_.:/-") // [A-Za-z0-9_.:/-]
)
