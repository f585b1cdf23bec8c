package lockcore

import (
	"fmt"
	"testing"
	"time"
)

// A full HotKeys forgets expired keys first, then the one that would
// expire soonest; it never grows past its size, and its zero value works.
func TestHotKeysBounded(t *testing.T) {
	now := time.Now()
	h := NewHotKeys(2)
	a, b, c := Key{Group: "g", ID: "a"}, Key{Group: "g", ID: "b"}, Key{Group: "g", ID: "c"}
	h.mark(a, now.Add(time.Hour))
	h.mark(b, now.Add(time.Minute))
	h.mark(c, now.Add(2*time.Hour))
	if !h.hot(a, now) || h.hot(b, now) || !h.hot(c, now) {
		t.Errorf("hot a, b, c = %v, %v, %v, want true, false, true (b ended soonest)", h.hot(a, now), h.hot(b, now), h.hot(c, now))
	}
	if h.hot(a, now.Add(2*time.Hour)) {
		t.Error("a is hot after its mark ended")
	}
	var z HotKeys
	for i := range DefaultHotKeys + 10 {
		z.mark(Key{Group: "g", ID: fmt.Sprint(i)}, now.Add(time.Hour))
	}
	if n := len(z.keys); n != DefaultHotKeys {
		t.Errorf("zero HotKeys holds %d keys, want %d", n, DefaultHotKeys)
	}
	var nilKeys *HotKeys
	nilKeys.mark(a, now.Add(time.Hour))
	if nilKeys.hot(a, now) {
		t.Error("a nil HotKeys says a key is hot")
	}
}
