package httpmw

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// varyKey is the context key of a request's varyFields.
type varyKey struct{}

// varyFields are the header fields a request's key was taken from: its
// answer depends on them, not only on the target URI, and names them in
// Vary (RFC 9110 §12.5.5).
type varyFields struct {
	mu    sync.Mutex // guards names
	names []string
}

// withVary returns ctx carrying a new varyFields for the key helpers.
func withVary(ctx context.Context) (context.Context, *varyFields) {
	v := &varyFields{}
	return context.WithValue(ctx, varyKey{}, v), v
}

// varyOn records, in the varyFields ctx carries, that the key read the
// header field name.
func varyOn(ctx context.Context, name string) {
	v, ok := ctx.Value(varyKey{}).(*varyFields)
	if !ok {
		return
	}
	name = http.CanonicalHeaderKey(name)
	v.mu.Lock()
	defer v.mu.Unlock()
	if !slices.Contains(v.names, name) {
		v.names = append(v.names, name)
	}
}

// header is the Vary header field's value, "" when the key read none.
func (v *varyFields) header() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return strings.Join(v.names, ", ")
}
