package lockcore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// This file holds the request checks and the item-size rule that both
// stores apply, so that MemoryStore refuses exactly what DynamoDB refuses.

// errEmptyRevision guards the revision equality tests: an empty revision
// would let a request match an item it did not write.
var errEmptyRevision = errors.New("empty revision")

// checkStrings returns an error naming the first field that is not valid
// UTF-8: DynamoDB stores strings as UTF-8 and refuses anything else.
func checkStrings(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if !utf8.ValidString(fields[i+1]) {
			return fmt.Errorf("%s is not valid UTF-8", fields[i])
		}
	}
	return nil
}

// checkNow refuses a request time before the Unix epoch. No clock reads
// that, and with it an attribute the item lacks would compare differently
// on the two stores: DynamoDB finds a comparison with an absent attribute
// false, MemoryStore compares the field's zero value.
func checkNow(ms int64) error {
	if ms < 0 {
		return fmt.Errorf("request time %d ms is before the Unix epoch", ms)
	}
	return nil
}

func checkKey(k Key) error {
	return checkStrings("lock group", k.Group, "lock id", k.ID)
}

func checkAcquireRequest(req storeapi.AcquireRequest) error {
	if req.Revision == "" {
		return errEmptyRevision
	}
	if err := checkNow(req.NowMs); err != nil {
		return err
	}
	obsRev := ""
	if req.Observed != nil {
		obsRev = req.Observed.Revision
	}
	if err := checkKey(req.Key); err != nil {
		return err
	}
	return checkStrings("owner", req.Holder, "revision", req.Revision,
		"record account", req.RecordAccount, "observed revision", obsRev)
}

func checkRenewRequest(req storeapi.RenewRequest) error {
	if req.Revision == "" {
		return errEmptyRevision
	}
	if err := checkNow(req.NowMs); err != nil {
		return err
	}
	if err := checkKey(req.Key); err != nil {
		return err
	}
	return checkStrings("revision", req.Revision)
}

func checkReleaseRequest(req storeapi.ReleaseRequest) error {
	switch {
	case req.Revision == "":
		return errEmptyRevision
	case !req.Result.Valid():
		return fmt.Errorf("invalid result %q", req.Result)
	case len(req.Answer) > MaxAnswerBytes:
		return fmt.Errorf("%w: %d bytes, the maximum is %d", ErrAnswerTooLarge, len(req.Answer), MaxAnswerBytes)
	case len(req.Answer) > 0 && req.Result != Success:
		return errors.New("an answer is published only with success")
	case req.NowMs < 0:
		return checkNow(req.NowMs)
	case req.Unheld && (req.Result != Failure || !req.KeepEpisode):
		return errors.New("the freeing of a write nobody held (unheld) is a failure that keeps the episode")
	case req.HoldMeanMs < 0 || req.HoldDevMs < 0:
		return fmt.Errorf("negative hold history (mean %d ms, deviation %d ms)", req.HoldMeanMs, req.HoldDevMs)
	}
	if err := checkKey(req.Key); err != nil {
		return err
	}
	return checkStrings("revision", req.Revision, "result reference", req.ResultRef, "failure reason", req.FailReason)
}

// itemSize returns the size DynamoDB counts for it as DynamoStore stores
// it: for each attribute, the UTF-8 length of its name plus the size of its
// value (a string's UTF-8 length, a binary's length, a number's encoded
// size, 1 for a boolean). The optional attributes that DynamoStore leaves
// out when empty are left out here too; the failure attributes are always
// counted (a Success release stores them as zeros), and so is the record
// of the last publication (an operator's release stores it empty), so for an item that
// never was released this is a few bytes more than DynamoDB counts: the
// memory store is, if anything, stricter.
func itemSize(it storeapi.Item) int {
	n := 0
	str := func(name, v string) { n += len(name) + len(v) }
	opt := func(name, v string) {
		if v != "" {
			str(name, v)
		}
	}
	num := func(name string, v int64) { n += len(name) + numberSize(v) }
	optNum := func(name string, v int64) {
		if v != 0 {
			num(name, v)
		}
	}
	str(storeapi.AttrLockKey, storeapi.PartitionKey(it.Key))
	str(storeapi.AttrLockGroup, it.Key.Group)
	str(storeapi.AttrLockID, it.Key.ID)
	str(storeapi.AttrHolderName, it.Holder)
	str(storeapi.AttrRevision, it.Revision)
	num(storeapi.AttrFence, it.Fence)
	num(storeapi.AttrBeat, it.Beat)
	num(storeapi.AttrLeaseMs, it.Lease.Milliseconds())
	num(storeapi.AttrHeartbeatAtMs, it.HeartbeatAtMs)
	num(storeapi.AttrLeaseUntilMs, it.LeaseUntilMs)
	num(storeapi.AttrExpiresAtMs, it.ExpiresAtMs)
	n += len(storeapi.AttrIsReleased) + 1
	str(storeapi.AttrRecordAccount, it.RecordAccount)
	str(storeapi.AttrPrevRevision, it.PrevRevision)
	str(storeapi.AttrPrevResult, string(it.PrevResult))
	str(storeapi.AttrPrevFailReason, it.PrevFailReason)
	str(storeapi.AttrPublishedRevision, it.PublishedRevision)
	str(storeapi.AttrPublishedResult, string(it.PublishedResult))
	opt(storeapi.AttrResult, string(it.Result))
	opt(storeapi.AttrResultRef, it.ResultRef)
	optNum(storeapi.AttrResultFence, it.ResultFence)
	optNum(storeapi.AttrReleasedAtMs, it.ReleasedAtMs)
	optNum(storeapi.AttrTTL, it.TTL)
	num(storeapi.AttrFailures, it.Failures)
	num(storeapi.AttrNotBeforeMs, it.NotBeforeMs)
	str(storeapi.AttrFailReason, it.FailReason)
	num(storeapi.AttrFailRecentUntilMs, it.FailRecentUntilMs)
	num(storeapi.AttrAcquiredAtMs, it.AcquiredAtMs)
	if it.HoldMeanMs != 0 {
		num(storeapi.AttrHoldMeanMs, it.HoldMeanMs)
		num(storeapi.AttrHoldDevMs, it.HoldDevMs)
	}
	if len(it.Answer) > 0 {
		n += len(storeapi.AttrAnswer) + len(it.Answer)
	}
	return n
}

// numberSize is DynamoDB's size of a number: 1 byte per two significant
// digits (leading and trailing zeros trimmed), with the digits paired from
// the decimal point, plus 1, plus 1 for a negative number.
func numberSize(v int64) int {
	if v == 0 {
		return 1
	}
	all := strings.TrimPrefix(strconv.FormatInt(v, 10), "-")
	digits := strings.TrimRight(all, "0")
	n := 1 + (len(digits)+1)/2
	if len(all)%2 == 1 && len(digits)%2 == 0 {
		// DynamoDB stores base-100 digits aligned on the decimal point:
		// with an odd number of digits the leading byte holds one digit,
		// and an even count of significant digits then spans one more.
		n++
	}
	if v < 0 {
		n++
	}
	return n
}

// checkItemSize refuses an item larger than MaxItemBytes.
func checkItemSize(it storeapi.Item) error {
	if n := itemSize(it); n > storeapi.MaxItemBytes {
		return fmt.Errorf("%w: %d bytes, the maximum is %d", storeapi.ErrItemTooLarge, n, storeapi.MaxItemBytes)
	}
	return nil
}
