// Package awserr withholds the messages of AWS API errors from log text:
// a store's or a handler's AccessDeniedException names the account, the
// role and the resource; its code says what went wrong.
package awserr

import (
	"cmp"
	"errors"
	"slices"
	"strings"

	"github.com/aws/smithy-go"
)

// Withheld replaces the message of an AWS API error.
const Withheld = "(message withheld)"

// Redact returns the text of err with the message of every AWS API error
// (smithy.APIError) in its tree withheld, wrapped or joined, and whether
// there was one to withhold.
func Redact(err error) (string, bool) {
	msgs := messages(err, nil)
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorMessage() != "" { // one found by an As method
		msgs = append(msgs, ae.ErrorMessage())
	}
	if len(msgs) == 0 {
		return "", false
	}
	// The longest first: a message may contain another.
	slices.SortFunc(msgs, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	text := err.Error()
	for _, m := range msgs {
		text = strings.ReplaceAll(text, m, Withheld)
	}
	return text, true
}

// messages appends the messages of the AWS API errors in err's tree.
func messages(err error, out []string) []string {
	for err != nil {
		if ae, ok := err.(smithy.APIError); ok && ae.ErrorMessage() != "" {
			out = append(out, ae.ErrorMessage())
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				out = messages(e, out)
			}
			return out
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return out
		}
	}
	return out
}
