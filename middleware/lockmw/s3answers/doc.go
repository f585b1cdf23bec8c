// Package s3answers is a lockmw.AnswerStore on Amazon S3: it carries the
// answers that are too large for the lock item (over
// lockmw.Answers.MaxInlineBytes, 64 KiB by default; DynamoDB's items stop
// at 400 KB) from the invocation that holds the lock to the ones that
// wait for it, by reference.
//
//	client := s3.NewFromConfig(cfg)
//	answers, err := s3answers.New(client, "my-answers-bucket", "fetch-cache/")
//	if err != nil { ... }
//	h := lockmw.Wrap(fetch, store, key, lockmw.WithAnswers(lockmw.Answers{Store: answers}))
//
// The holder puts each answer as one object, its key the prefix followed
// by the answer's ref (lockmw makes refs of letters, digits, "/" and "-",
// a new one for each published answer), before it releases the lock; the
// lock item carries the ref and the answer's SHA-256, which each waiter
// checks on the bytes it reads back: an object that was altered or
// replaced gives the waiters lockmw.ErrNoAnswer, never its bytes. The
// put runs within the holder's context, the read within a deadline
// lockmw sets before the invocation's own.
//
// # Errors
//
// A missing object is an error matching [ErrNotFound]. Every error's text
// leaves out the bucket, the key, the endpoint and S3's own message
// (which can name the account and the role): it says what failed, with
// S3's error code and HTTP status when S3 answered (such as "AccessDenied
// (HTTP 403)"), or that the endpoint refused the connection or timed out.
// The SDK's error is still there for errors.As. The client's own retries
// apply (the SDK's default is three attempts).
//
// # Permissions
//
// The function's role needs s3:PutObject and s3:GetObject on the prefix,
// and nothing else (no s3:ListBucket, no s3:DeleteObject):
//
//	{
//	  "Version": "2012-10-17",
//	  "Statement": [{
//	    "Effect": "Allow",
//	    "Action": ["s3:PutObject", "s3:GetObject"],
//	    "Resource": "arn:aws:s3:::my-answers-bucket/fetch-cache/*"
//	  }]
//	}
//
// Without s3:ListBucket, S3 answers a read of a missing object with
// AccessDenied (HTTP 403), not NoSuchKey: the waiter's error says
// AccessDenied, and the waiter gets lockmw.ErrNoAnswer either way. A
// bucket encrypted with a KMS key of its own also needs kms:GenerateDataKey
// (put) and kms:Decrypt (get) on that key.
//
// # Expiry
//
// Neither the lock nor this package deletes an object. Give the bucket a
// lifecycle rule on the prefix that expires objects after the longest
// time an answer is read: the fresh-success window (lockcore.WithFreshSuccess)
// or, with middleware/idempotency, its retention (default 1 h), plus a
// margin for a waiter that started reading just before it ended. S3
// expires objects in whole days, so one day suits any window up to a
// few hours:
//
//	{
//	  "Rules": [{
//	    "ID": "herdlock-answers",
//	    "Filter": {"Prefix": "fetch-cache/"},
//	    "Status": "Enabled",
//	    "Expiration": {"Days": 1}
//	  }]
//	}
//
// # Keys
//
// New refuses a prefix with characters outside S3's safe set (letters,
// digits and !-_.*'()/) or a "." or ".." segment, or longer than 512
// bytes; PutAnswer and GetAnswer refuse a ref of that kind before any
// request.
//
// The package is a module of its own, so that a function that keeps its
// answers inline does not build the S3 SDK.
package s3answers
