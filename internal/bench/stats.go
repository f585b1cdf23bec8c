package bench

import (
	"math"
	"slices"
	"time"
)

// Summary is the distribution of a sample, in milliseconds.
type Summary struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50Ms"`
	P99 float64 `json:"p99Ms"`
	Max float64 `json:"maxMs"`
}

// Summarize returns the nearest-rank p50, p99 and maximum of ms.
func Summarize(ms []float64) Summary {
	if len(ms) == 0 {
		return Summary{}
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	return Summary{N: len(s), P50: rank(s, 0.50), P99: rank(s, 0.99), Max: s[len(s)-1]}
}

// rank returns the nearest-rank p-quantile of sorted s.
func rank(s []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// median returns the median of d.
func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
