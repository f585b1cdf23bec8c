package capacity

import (
	"net/http"
	"net/http/httptest"
)

// HandlerTransport returns an http.RoundTripper that serves every request
// with h in process, without a network hop: the [Config.Transport] for a
// server such as minidyn's server.NewServer().
func HandlerTransport(h http.Handler) http.RoundTripper { return handlerTransport{h} }

type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}
