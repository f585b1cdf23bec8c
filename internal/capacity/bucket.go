package capacity

import "time"

// bucket is a token bucket of capacity units: it refills at rate units per
// second up to size, and may be driven below zero by charges settled after
// the fact. It is not safe for concurrent use; Proxy guards it.
type bucket struct {
	rate   float64
	size   float64
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

func newBucket(rate float64, burst time.Duration, now time.Time) *bucket {
	size := rate * burst.Seconds()
	return &bucket{rate: rate, size: size, tokens: size, at: now}
}

func (b *bucket) refill(now time.Time) {
	if dt := now.Sub(b.at); dt > 0 {
		b.tokens = min(b.size, b.tokens+b.rate*dt.Seconds())
		b.at = now
	}
}

// take removes cost when the bucket holds at least that much, and reports
// whether it did.
func (b *bucket) take(cost float64, now time.Time) bool {
	b.refill(now)
	if b.tokens < cost {
		return false
	}
	b.tokens -= cost
	return true
}

// settle adds delta to the charge already taken (negative: a refund).
func (b *bucket) settle(delta float64, now time.Time) {
	b.refill(now)
	b.tokens = min(b.size, b.tokens-delta)
}

// setRate changes the refill rate and size, keeping the fill level.
func (b *bucket) setRate(rate float64, burst time.Duration, now time.Time) {
	b.refill(now)
	b.rate, b.size = rate, rate*burst.Seconds()
	b.tokens = min(b.tokens, b.size)
}
