package emf

import "fmt"

// Unit is a CloudWatch metric unit. Only the constants below are valid; an
// [Metrics.Add] with any other Unit fails with [ErrUnknownUnit].
type Unit string

// The units that the embedded metric format accepts, spelled as CloudWatch
// spells them.
const (
	Seconds            Unit = "Seconds"
	Microseconds       Unit = "Microseconds"
	Milliseconds       Unit = "Milliseconds"
	Bytes              Unit = "Bytes"
	Kilobytes          Unit = "Kilobytes"
	Megabytes          Unit = "Megabytes"
	Gigabytes          Unit = "Gigabytes"
	Terabytes          Unit = "Terabytes"
	Bits               Unit = "Bits"
	Kilobits           Unit = "Kilobits"
	Megabits           Unit = "Megabits"
	Gigabits           Unit = "Gigabits"
	Terabits           Unit = "Terabits"
	Percent            Unit = "Percent"
	Count              Unit = "Count"
	BytesPerSecond     Unit = "Bytes/Second"
	KilobytesPerSecond Unit = "Kilobytes/Second"
	MegabytesPerSecond Unit = "Megabytes/Second"
	GigabytesPerSecond Unit = "Gigabytes/Second"
	TerabytesPerSecond Unit = "Terabytes/Second"
	BitsPerSecond      Unit = "Bits/Second"
	KilobitsPerSecond  Unit = "Kilobits/Second"
	MegabitsPerSecond  Unit = "Megabits/Second"
	GigabitsPerSecond  Unit = "Gigabits/Second"
	TerabitsPerSecond  Unit = "Terabits/Second"
	CountPerSecond     Unit = "Count/Second"
	None               Unit = "None"
)

// ParseUnit returns the Unit spelled s, which must match a CloudWatch unit
// name exactly ("Count", "Bytes/Second"). Any other string, including the
// empty string, is an error matching [ErrUnknownUnit]. It is safe for
// concurrent use.
func ParseUnit(s string) (Unit, error) {
	u := Unit(s)
	if !u.valid() {
		return "", fmt.Errorf("%w: %s", ErrUnknownUnit, quote(s))
	}
	return u, nil
}

func (u Unit) valid() bool {
	switch u {
	case Seconds, Microseconds, Milliseconds,
		Bytes, Kilobytes, Megabytes, Gigabytes, Terabytes,
		Bits, Kilobits, Megabits, Gigabits, Terabits,
		Percent, Count,
		BytesPerSecond, KilobytesPerSecond, MegabytesPerSecond, GigabytesPerSecond, TerabytesPerSecond,
		BitsPerSecond, KilobitsPerSecond, MegabitsPerSecond, GigabitsPerSecond, TerabitsPerSecond,
		CountPerSecond, None:
		return true
	}
	return false
}
