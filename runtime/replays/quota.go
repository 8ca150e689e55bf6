package replays

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/store"
)

// The upload quota: every checker the library stores for the first time
// (an upload, or a market listing's Python source) is charged, in bytes,
// to its uploader: the agent that proved who it is, or an anonymous
// caller's client address (principal.Actor.Counted). A checker already
// stored costs nothing, as it stores nothing. Each uploader has a bucket
// of Quota.Bytes, refilled at Bytes per Quota.Per: it may store Bytes at
// once, and Bytes in every Per after that. What is stored is kept; the
// quota bounds how fast an uploader grows the store, not what it holds
// (RATIONALE.md). The bucket is kept in the store, charged in the
// transaction that stores the checker, so that a refused upload stores
// nothing, and every node sharing the store counts the same bucket.

// ECodeUploadQuota is an upload refused by its uploader's quota (429, with
// Retry-After).
const ECodeUploadQuota = "upload_quota_exceeded"

// Quota is how many bytes of new checkers one uploader may store: Bytes
// at once, and Bytes in every Per after that. The zero Quota is no quota.
type Quota struct {
	Bytes int64
	Per   time.Duration
}

func (q Quota) on() bool { return q.Bytes > 0 && q.Per > 0 }

// Quotas are the quotas of an agent that proved who it is (or the
// operator) and of an anonymous caller's client address.
type Quotas struct {
	Agent, Address Quota
}

// DefaultQuotas are the quotas assay serve runs with unless --limits says
// otherwise.
var DefaultQuotas = Quotas{
	Agent:   Quota{Bytes: 64 << 20, Per: 24 * time.Hour},
	Address: Quota{Bytes: 16 << 20, Per: 24 * time.Hour},
}

// of is the quota of a's uploads.
func (q Quotas) of(a principal.Actor) Quota {
	if a.Kind == principal.Anonymous {
		return q.Address
	}
	return q.Agent
}

// keyQuota is the prefix of the uploaders' buckets: quota/upload/<counted>
// -> bucket.
const keyQuota = "quota/upload/"

// bucket is an uploader's quota as stored: Left bytes as of At.
type bucket struct {
	Left int64     `json:"left"`
	At   time.Time `json:"at"`
}

// QuotaError is an upload refused by its uploader's quota: 429
// upload_quota_exceeded, with when enough will have come back.
type QuotaError struct {
	Err  *fault.Error
	Wait time.Duration
}

func (e *QuotaError) Error() string { return e.Err.Error() }
func (e *QuotaError) Unwrap() error { return e.Err }

// RetryAfter is how long until the upload would fit.
func (e *QuotaError) RetryAfter() time.Duration { return e.Wait }

// charge takes n bytes from a's bucket in tx as of now: nil when they
// fit, and then the bucket is written back; a *QuotaError (429) when
// they do not yet, or checker_too_large (413) when they never could.
// Nothing is written on an error.
func (q Quota) charge(tx store.Tx, a principal.Actor, n int64, now time.Time, write bool) error {
	if !q.on() {
		return nil
	}
	if n > q.Bytes {
		return fault.New(fault.TooLarge, ECodeCheckerTooLarge, "the checker is %d bytes; this uploader's quota is %d bytes every %s", n, q.Bytes, per(q.Per))
	}
	key := keyQuota + a.Counted()
	b := bucket{Left: q.Bytes, At: now}
	var stored bucket
	switch err := store.GetJSON(tx, key, &stored); {
	case err == nil:
		b = stored
		b.Left = q.refill(b.Left, now.Sub(b.At))
		b.At = now
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	if n > b.Left {
		wait := time.Duration(math.Ceil(float64(n-b.Left) / float64(q.Bytes) * float64(q.Per)))
		who := "this agent"
		if a.Kind == principal.Anonymous {
			who = "this client address"
		}
		return &QuotaError{Wait: wait, Err: fault.New(fault.TooMany, ECodeUploadQuota,
			"%s may store %d bytes of new checkers every %s and has %d left; the %d bytes of this one come back in %s",
			who, q.Bytes, per(q.Per), b.Left, n, wait.Round(time.Second))}
	}
	if !write {
		return nil
	}
	b.Left -= n
	return store.SetJSON(tx, key, b)
}

// refill is what a bucket holding left holds after elapsed: Bytes per
// Per more, up to Bytes.
func (q Quota) refill(left int64, elapsed time.Duration) int64 {
	if elapsed <= 0 {
		return left
	}
	more := float64(q.Bytes) * (float64(elapsed) / float64(q.Per))
	if more >= float64(q.Bytes-left) {
		return q.Bytes
	}
	return left + int64(more)
}

// String is the quota as --limits writes it: "16MiB/24h".
func (q Quota) String() string {
	if !q.on() {
		return "off"
	}
	return fmt.Sprintf("%s/%s", Bytes(q.Bytes), per(q.Per))
}

// per writes a quota's period without a zero tail: 24h, not 24h0m0s.
func per(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// Bytes writes n in the largest binary unit that divides it: 16MiB, 1500B.
type Bytes int64

func (n Bytes) String() string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if int64(n) >= u.size && int64(n)%u.size == 0 {
			return fmt.Sprintf("%d%s", int64(n)/u.size, u.name)
		}
	}
	return fmt.Sprintf("%dB", int64(n))
}
