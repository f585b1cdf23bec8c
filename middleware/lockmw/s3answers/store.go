package s3answers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/herdlock/herdlock/middleware/lockmw"
)

// maxObjectBytes bounds what GetAnswer reads: lockmw sends at most 32 MiB
// by reference, so an object larger than that is not one of its answers.
const maxObjectBytes = 32 << 20

// maxKeyBytes is S3's limit on an object key's length (UTF-8 bytes).
const maxKeyBytes = 1024

// Client is the part of the S3 API that a [Store] calls; *s3.Client
// implements it.
type Client interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// Store is a lockmw.AnswerStore that keeps each answer as one S3 object
// under its prefix followed by the answer's ref. It never deletes an
// object: a bucket lifecycle rule expires them (see the package doc).
// Store is safe for concurrent use.
type Store struct {
	client Client
	bucket string
	prefix string
}

var _ lockmw.AnswerStore = (*Store)(nil)

// New returns a Store that writes to bucket through client, each object's
// key being prefix followed by the answer's ref. The prefix may be empty
// (the refs lockmw makes start with "herdlock-answer/"); a non-empty one
// usually ends with "/". A nil client, an empty bucket or a prefix that is
// not a safe key (see the package doc) is an error. The client's own
// options (region, retries, timeouts) apply unchanged.
func New(client Client, bucket, prefix string) (*Store, error) {
	switch {
	case isNil(client):
		return nil, errors.New("s3answers: New: nil client")
	case strings.TrimSpace(bucket) == "":
		return nil, errors.New("s3answers: New: empty bucket name")
	case bucket != strings.TrimSpace(bucket):
		return nil, errors.New("s3answers: New: the bucket name has leading or trailing white space")
	case !safeKey(prefix):
		return nil, fmt.Errorf("s3answers: New: the prefix %q is not a safe object key: use letters, digits and !-_.*'()/ only, at most %d bytes", prefix, maxKeyBytes/2)
	case len(prefix) > maxKeyBytes/2:
		return nil, fmt.Errorf("s3answers: New: the prefix is %d bytes, at most %d", len(prefix), maxKeyBytes/2)
	}
	return &Store{client: client, bucket: bucket, prefix: prefix}, nil
}

// PutAnswer writes data as the object prefix+ref, within ctx. A ref that
// is not a safe key is refused before any request.
func (s *Store) PutAnswer(ctx context.Context, ref string, data []byte) error {
	key, err := s.key(ref)
	if err != nil {
		return err
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		ContentType:   aws.String("application/octet-stream"),
	})
	if err != nil {
		return describe(ctx, "put", err)
	}
	return nil
}

// GetAnswer reads the object prefix+ref, within ctx. A missing object is
// an error matching [ErrNotFound]; an object over 32 MiB (more than lockmw
// ever puts) is an error.
func (s *Store) GetAnswer(ctx context.Context, ref string) ([]byte, error) {
	key, err := s.key(ref)
	if err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(key),
	})
	if err != nil {
		return nil, describe(ctx, "get", err)
	}
	defer out.Body.Close()
	if out.ContentLength != nil && *out.ContentLength > maxObjectBytes {
		return nil, fmt.Errorf("s3answers: get: the object is %d bytes, more than an answer (%d)", *out.ContentLength, maxObjectBytes)
	}
	data, err := io.ReadAll(io.LimitReader(out.Body, maxObjectBytes+1))
	if err != nil {
		return nil, describe(ctx, "get: read", err)
	}
	if len(data) > maxObjectBytes {
		return nil, fmt.Errorf("s3answers: get: the object is more than an answer (%d bytes)", maxObjectBytes)
	}
	return data, nil
}

// key returns the object key of ref, or an error when ref is not a safe
// key.
func (s *Store) key(ref string) (string, error) {
	if ref == "" || !safeKey(ref) || len(s.prefix)+len(ref) > maxKeyBytes {
		return "", errBadRef
	}
	return s.prefix + ref, nil
}

// safeKey reports whether k holds only the characters S3 documents as
// safe in object keys, and no "." or ".." path segment (which some tools
// and SDKs normalise away).
func safeKey(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!-_.*'()/", c) >= 0:
		default:
			return false
		}
	}
	for seg := range strings.SplitSeq(k, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// isNil reports whether c is nil or a typed nil pointer.
func isNil(c Client) bool {
	if c == nil {
		return true
	}
	p, ok := c.(*s3.Client)
	return ok && p == nil
}
