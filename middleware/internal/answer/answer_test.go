package answer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	at := time.Unix(1796153400, 123456789)
	tests := []struct {
		name string
		a    Answer
	}{
		{"a GET's answer", Answer{Method: "GET", Status: 200, ContentType: "application/json", Body: []byte(`{"pair":"EURUSD"}`), At: at}},
		{"a 204", Answer{Method: "GET", Status: 204, At: at}},
		{"a bare success", Done},
		{"a binary body", Answer{Method: "POST", Status: 201, ContentType: "application/octet-stream", Body: []byte{0, 1, 2, 0xff}, At: at}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Codec{}.Encode(tt.a)
			if err != nil {
				t.Fatalf("Encode() = %v", err)
			}
			got, err := Codec{}.Decode(b)
			if err != nil || got.Method != tt.a.Method || got.Status != tt.a.Status || got.ContentType != tt.a.ContentType ||
				!bytes.Equal(got.Body, tt.a.Body) || !got.At.Equal(tt.a.At) {
				t.Errorf("Decode(Encode(%+v)) = %+v, %v", tt.a, got, err)
			}
		})
	}
}

// TestEarlierFormatsAreRead: what httpmw and sqsmw published before this
// format, which a deployment's fresh-success window may still hold.
func TestEarlierFormatsAreRead(t *testing.T) {
	v1 := []byte{versionV1}
	v1 = binary.BigEndian.AppendUint16(v1, 200)
	v1 = binary.BigEndian.AppendUint64(v1, uint64(time.Unix(1796153400, 0).UnixNano()))
	v1 = binary.BigEndian.AppendUint16(v1, uint16(len("application/json")))
	v1 = append(append(v1, "application/json"...), `{"pair":"EURUSD"}`...)
	if a, err := (Codec{}).Decode(v1); err != nil || a.Method != "GET" || a.Status != 200 || string(a.Body) != `{"pair":"EURUSD"}` {
		t.Errorf("Decode(httpmw v1) = %+v, %v; want a GET's 200", a, err)
	}
	if a, err := (Codec{}).Decode([]byte("{}")); err != nil || a.HasHTTP() {
		t.Errorf("Decode(sqsmw's {}) = %+v, %v; want Done", a, err)
	}
}

func TestMalformedIsRefused(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"unknown version", []byte{9, 0}},
		{"method longer than the data", []byte{version, 200, 'G'}},
		{"cut in the header", []byte{version, 3, 'G', 'E', 'T', 0}},
		{"media type longer than the data", append([]byte{version, 0, 0, 200, 0, 0, 0, 0, 0, 0, 0, 0}, 0, 9)},
		{"status out of range", append([]byte{version, 0, 0x03, 0xe8, 0, 0, 0, 0, 0, 0, 0, 0}, 0, 0)},
		{"JSON of another shape", []byte(`{"pair":"EURUSD"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if a, err := (Codec{}).Decode(tt.data); !errors.Is(err, ErrMalformed) {
				t.Errorf("Decode(%q) = %+v, %v; want ErrMalformed", tt.data, a, err)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	b, _ := Codec{}.Encode(Answer{Method: "GET", Status: 200, ContentType: "text/plain", Body: []byte("x")})
	f.Add(b)
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Codec{}.Decode(data)
		if err != nil {
			return
		}
		again, err := Codec{}.Encode(a)
		if err != nil {
			t.Fatalf("Encode(Decode(%q)) = %v", data, err)
		}
		if b, err := (Codec{}).Decode(again); err != nil || b.Status != a.Status || !bytes.Equal(b.Body, a.Body) {
			t.Fatalf("round trip of %q: %+v, %v", data, b, err)
		}
	})
}
