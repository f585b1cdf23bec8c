package emf

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestNewConfig(t *testing.T) {
	tests := []struct {
		name          string
		env           map[string]string
		opts          []Option
		wantNamespace string
		wantDims      map[string]string
		wantDisabled  bool
	}{
		{
			name:          "from environment",
			env:           map[string]string{envNamespace: "EnvNS", envService: "envsvc"},
			wantNamespace: "EnvNS",
			wantDims:      map[string]string{"service": "envsvc"},
		},
		{
			name:          "options win",
			env:           map[string]string{envNamespace: "EnvNS", envService: "envsvc", envDisabled: "true"},
			opts:          []Option{WithNamespace("OptNS"), WithService("optsvc"), withDisabled(false)},
			wantNamespace: "OptNS",
			wantDims:      map[string]string{"service": "optsvc"},
		},
		{
			name:          "empty service option removes the dimension",
			env:           map[string]string{envNamespace: "EnvNS", envService: "envsvc"},
			opts:          []Option{WithService("")},
			wantNamespace: "EnvNS",
			wantDims:      map[string]string{},
		},
		{
			name:          "disabled from environment",
			env:           map[string]string{envNamespace: "EnvNS", envDisabled: "TRUE"},
			wantNamespace: "EnvNS",
			wantDims:      map[string]string{},
			wantDisabled:  true,
		},
		{
			name:          "disabled needs no namespace",
			env:           map[string]string{envDisabled: "1"},
			wantNamespace: "",
			wantDims:      map[string]string{},
			wantDisabled:  true,
		},
		{
			name:          "default dimensions merge",
			env:           map[string]string{envNamespace: "EnvNS"},
			opts:          []Option{WithDefaultDimensions(map[string]string{"a": "1"}), WithDefaultDimensions(map[string]string{"b": "2"})},
			wantNamespace: "EnvNS",
			wantDims:      map[string]string{"a": "1", "b": "2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			m, err := New(append([]Option{WithWriter(io.Discard)}, tt.opts...)...)
			if err != nil {
				t.Fatalf("New() = %v", err)
			}
			dims := map[string]string{}
			for _, d := range m.defaults {
				dims[d.key] = d.value
			}
			if m.namespace != tt.wantNamespace || !reflect.DeepEqual(dims, tt.wantDims) || m.disabled != tt.wantDisabled {
				t.Errorf("New() = namespace %q, dimensions %v, disabled %v; want %q, %v, %v",
					m.namespace, dims, m.disabled, tt.wantNamespace, tt.wantDims, tt.wantDisabled)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	many := map[string]string{}
	for i := range 30 {
		many[key("d", i)] = "v"
	}
	tests := []struct {
		name string
		env  map[string]string
		opts []Option
		want error
	}{
		{"no namespace", nil, nil, ErrInvalid},
		{"blank namespace", nil, []Option{WithNamespace("  ")}, ErrInvalid},
		{"namespace 256 long", nil, []Option{WithNamespace(strings.Repeat("n", 256))}, ErrInvalid},
		{"reserved namespace", nil, []Option{WithNamespace("AWS/Lambda")}, ErrInvalid},
		{"non-ASCII namespace", nil, []Option{WithNamespace("Café")}, ErrInvalid},
		{"invalid disabled variable", map[string]string{envDisabled: "maybe"}, []Option{WithNamespace("NS")}, ErrInvalid},
		{"nil writer", nil, []Option{WithNamespace("NS"), WithWriter(nil)}, ErrInvalid},
		{"nil clock", nil, []Option{WithNamespace("NS"), withClock(nil)}, ErrInvalid},
		{"invalid service", nil, []Option{WithNamespace("NS"), WithService("\x00")}, ErrInvalid},
		{"invalid default dimension", nil, []Option{WithNamespace("NS"), WithDefaultDimensions(map[string]string{"k": ""})}, ErrInvalid},
		{"service twice", nil, []Option{WithNamespace("NS"), WithService("s"), WithDefaultDimensions(map[string]string{"service": "t"})}, ErrInvalid},
		{"31 dimensions", nil, []Option{WithNamespace("NS"), WithService("s"), WithDefaultDimensions(many)}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			if _, err := New(tt.opts...); !errors.Is(err, tt.want) {
				t.Errorf("New() = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestClock(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 678_900_000, time.UTC)
	m, buf := newTest(t, withClock(func() time.Time { return now }))
	mustNil(t, m.Add("m", Count, 1))
	docs := flushDocs(t, m, buf)
	if got, want := docs[0].Timestamp, now.UnixMilli(); got != want {
		t.Errorf("Timestamp = %d, want %d", got, want)
	}
}

// clearEnv unsets the variables New reads, for the duration of the test.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{envNamespace, envService, envDisabled, envFunctionName, envDev, "AWS_LAMBDA_FUNCTION_NAME"} {
		t.Setenv(k, "")
	}
}
