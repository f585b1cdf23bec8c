package lockmw

import (
	"bytes"
	"compress/flate"
	"strings"
	"testing"
)

// TestDecodeAnswerBadInput: a stored answer that is empty, of an unknown
// format, corrupt, or that decompresses without bound is an error, never a
// panic or an unbounded allocation.
func TestDecodeAnswerBadInput(t *testing.T) {
	var bomb bytes.Buffer
	bomb.WriteByte(answerFlate)
	zw, _ := flate.NewWriter(&bomb, flate.BestCompression)
	zeros := make([]byte, 1<<20)
	for range maxDecodedAnswer/len(zeros) + 1 {
		_, _ = zw.Write(zeros)
	}
	_ = zw.Close()
	tests := []struct {
		name   string
		stored []byte
		want   string
	}{
		{"empty", nil, "empty answer"},
		{"unknown format", []byte("x{}"), "unknown answer format"},
		{"corrupt compression", []byte{answerFlate, 0xff, 0xff, 0xff}, "decompress answer"},
		{"decompression bomb", bomb.Bytes(), "decompresses to more than"},
		{"not JSON", []byte("rnot json"), "decode answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeAnswer[map[string]int](JSONCodec[map[string]int]{}, tt.stored)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("decodeAnswer() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestEncodeAnswerRoundTrip: raw below the compression threshold,
// compressed above it when that is smaller, and back.
func TestEncodeAnswerRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		v        string
		wantKind byte
	}{
		{"small", "EUR-USD 1.0842", answerRaw},
		{"large and repetitive", strings.Repeat("EUR-USD 1.0842 ", 200), answerFlate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stored, err := encodeAnswer[string](JSONCodec[string]{}, tt.v)
			if err != nil || stored[0] != tt.wantKind {
				t.Fatalf("encodeAnswer() = %q..., %v; want format %q", stored[:1], err, tt.wantKind)
			}
			got, err := decodeAnswer[string](JSONCodec[string]{}, stored)
			if err != nil || got != tt.v {
				t.Errorf("decodeAnswer() = %.20q, %v; want the value back", got, err)
			}
		})
	}
}
