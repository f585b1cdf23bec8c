package emf

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestPrettyFromEnv(t *testing.T) {
	clearEnv(t)
	write := func(opts ...Option) string {
		t.Helper()
		m, buf := newTest(t, opts...)
		mustNil(t, m.Add("Hits", Count, 1))
		mustNil(t, m.Add("Hits", Count, 2))
		mustNil(t, m.Flush())
		return string(buf.Bytes())
	}
	compact := write()
	if strings.Count(compact, "\n") != 1 {
		t.Fatalf("default output %q: want one line", compact)
	}

	t.Setenv(envDev, "true")
	pretty := write()
	if strings.Count(pretty, "\n") < 5 || !strings.HasSuffix(pretty, "}\n") {
		t.Errorf("%s=true output %q: want an indented document ending in a newline", envDev, pretty)
	}
	var back bytes.Buffer
	if err := json.Compact(&back, []byte(pretty)); err != nil || back.String()+"\n" != compact {
		t.Errorf("pretty output compacted = %q (%v), want the one-line document %q", back.String(), err, compact)
	}
	if got := write(withPretty(false)); got != compact {
		t.Errorf("withPretty(false) under %s=true wrote %q, want %q", envDev, got, compact)
	}

	t.Setenv(envDev, "sometimes")
	if _, err := New(WithNamespace("Test")); !errors.Is(err, ErrInvalid) {
		t.Errorf("New() with %s=sometimes = %v, want ErrInvalid", envDev, err)
	}
}

func TestFunctionNameFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  string
		opts []Option
		arg  string
		want string
	}{
		{"argument", "", nil, "from-context", "from-context"},
		{"Powertools variable over the argument", "from-powertools", nil, "from-context", "from-powertools"},
		{"option over the variable", "from-powertools", []Option{withFunctionName("from-option")}, "from-context", "from-option"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv(envFunctionName, tt.env)
			m, buf := newTest(t, tt.opts...)
			mustNil(t, m.CaptureColdStart(tt.arg))
			docs := flushDocs(t, m, buf)
			if len(docs) != 1 || docs[0].Dimensions["function_name"] != tt.want {
				t.Errorf("cold start documents %+v, want one with function_name %s", docs, tt.want)
			}
		})
	}
}
