package emf

// Unit is a CloudWatch metric unit, spelled as CloudWatch spells it. The
// constants below are the common ones; any other CloudWatch unit is
// Unit("Gigabits/Second") and so on. A Unit that is not a CloudWatch unit
// fails [Metrics.Add] with an error matching [ErrInvalid] that names it.
type Unit string

// The common units.
const (
	Seconds        Unit = "Seconds"
	Milliseconds   Unit = "Milliseconds"
	Microseconds   Unit = "Microseconds"
	Bytes          Unit = "Bytes"
	Kilobytes      Unit = "Kilobytes"
	Megabytes      Unit = "Megabytes"
	Count          Unit = "Count"
	Percent        Unit = "Percent"
	None           Unit = "None"
	CountPerSecond Unit = "Count/Second"
	BytesPerSecond Unit = "Bytes/Second"
)

// cloudWatchUnits are the units that the embedded metric format accepts
// ("Amazon CloudWatch API Reference", MetricDatum).
var cloudWatchUnits = map[Unit]bool{
	"Seconds": true, "Microseconds": true, "Milliseconds": true,
	"Bytes": true, "Kilobytes": true, "Megabytes": true, "Gigabytes": true, "Terabytes": true,
	"Bits": true, "Kilobits": true, "Megabits": true, "Gigabits": true, "Terabits": true,
	"Percent": true, "Count": true,
	"Bytes/Second": true, "Kilobytes/Second": true, "Megabytes/Second": true, "Gigabytes/Second": true, "Terabytes/Second": true,
	"Bits/Second": true, "Kilobits/Second": true, "Megabits/Second": true, "Gigabits/Second": true, "Terabits/Second": true,
	"Count/Second": true, "None": true,
}

func (u Unit) valid() bool { return cloudWatchUnits[u] }
