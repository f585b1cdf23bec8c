package answer

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// previousHTTPDecode is the previous release's httpmw answer reader, as it
// was (its answerCodec.Decode): during a rolling deployment (an alias
// shifting traffic, a canary) its instances read the items that this
// release's holders write in the same lock group.
func previousHTTPDecode(data []byte) (status int, contentType string, body []byte, at time.Time, err error) {
	const answerVersion, answerHeader = 1, 1 + 2 + 8 + 2
	if len(data) < answerHeader || data[0] != answerVersion {
		return 0, "", nil, time.Time{}, errors.New("httpmw: malformed inline answer")
	}
	status = int(binary.BigEndian.Uint16(data[1:3]))
	at = time.Unix(0, int64(binary.BigEndian.Uint64(data[3:11])))
	n := int(binary.BigEndian.Uint16(data[11:13]))
	if len(data) < answerHeader+n || status < 100 || status > 599 {
		return 0, "", nil, time.Time{}, errors.New("httpmw: malformed inline answer")
	}
	return status, string(data[answerHeader : answerHeader+n]), append([]byte(nil), data[answerHeader+n:]...), at, nil
}

// TestThePreviousReleaseReadsWhatThisOneWrites: a GET's answer is written
// in the format the previous httpmw reads, and a bare success in the one
// the previous sqsmw reads (lockmw's JSON codec of struct{}), so that
// during a rolling deployment the previous release's requests in the
// fresh window of this release's holder get its answer, not a malformed
// one.
func TestThePreviousReleaseReadsWhatThisOneWrites(t *testing.T) {
	at := time.Unix(1796153400, 123456789)
	b, err := Codec{}.Encode(Answer{Method: "GET", Status: 200, ContentType: "application/json", Body: []byte(`{"pair":"EURUSD"}`), At: at})
	if err != nil {
		t.Fatal(err)
	}
	status, ct, body, gotAt, err := previousHTTPDecode(b)
	if err != nil || status != 200 || ct != "application/json" || string(body) != `{"pair":"EURUSD"}` || !gotAt.Equal(at) {
		t.Errorf("the previous httpmw reads %d %q %q %v, %v; want the GET's 200", status, ct, body, gotAt, err)
	}
	done, err := Codec{}.Encode(Done)
	if err != nil {
		t.Fatal(err)
	}
	var v struct{}
	if err := json.Unmarshal(done, &v); err != nil {
		t.Errorf("the previous sqsmw cannot read a bare success %q: %v", done, err)
	}
}
