package lockcore

import (
	"fmt"
	"testing"
	"time"
)

// A full HotKeys forgets expired cold keys first, then the one that would
// expire soonest (which is then hot again); it never grows past its size,
// and its zero value works.
func TestHotKeysBounded(t *testing.T) {
	now := time.Now()
	h := NewHotKeys(2)
	a, b, c := Key{Group: "g", ID: "a"}, Key{Group: "g", ID: "b"}, Key{Group: "g", ID: "c"}
	h.cool(a, now.Add(time.Hour))
	h.cool(b, now.Add(time.Minute))
	h.cool(c, now.Add(2*time.Hour))
	if !h.cold(a, now) || h.cold(b, now) || !h.cold(c, now) {
		t.Errorf("cold a, b, c = %v, %v, %v, want true, false, true (b ended soonest)", h.cold(a, now), h.cold(b, now), h.cold(c, now))
	}
	if h.cold(a, now.Add(2*time.Hour)) {
		t.Error("a is cold after its mark ended")
	}
	var z HotKeys
	for i := range defaultHotKeys + 10 {
		z.cool(Key{Group: "g", ID: fmt.Sprint(i)}, now.Add(time.Hour))
	}
	if n := len(z.keys); n != defaultHotKeys {
		t.Errorf("zero HotKeys holds %d keys, want %d", n, defaultHotKeys)
	}
	var nilKeys *HotKeys
	nilKeys.cool(a, now.Add(time.Hour))
	if nilKeys.cold(a, now) {
		t.Error("a nil HotKeys says a key is cold")
	}
}
