package replays

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"time"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/store"
)

// MaxCheckerBytes bounds an uploaded checker. One badger transaction holds
// about 9 MiB, and a checker is stored in one.
const MaxCheckerBytes = 8 << 20

// The codes of an upload refused, beside the batch's.
const (
	ECodeCheckerTooLarge = "checker_too_large"
	ECodeInvalidSHA256   = "invalid_sha256"
	ECodeUnsupportedKind = "unsupported_checker_kind"
)

// Validator checks an uploaded checker of a kind (checkers.KindWasm or
// checkers.KindPython); *checkers.Runner implements it.
type Validator interface {
	// Validate reports whether module is a checker of kind that the
	// runner can run.
	Validate(ctx context.Context, kind string, module []byte) error
}

var _ Validator = (*checkers.Runner)(nil)

// Info is a stored checker's metadata, as the registry keeps it.
type Info = checkers.Info

// The kinds of checker an upload may be.
const (
	KindWasm   = checkers.KindWasm
	KindPython = checkers.KindPython
)

// Library is the checker registry as the services' callers meet it: the
// uploads every service names by sha256 (the court's criteria, the
// market's listings, POST /replays), validated before they are stored.
type Library struct {
	st    store.Store
	valid Validator
	now   func() time.Time
}

// NewLibrary returns the library of checkers kept in st, validating
// uploads with valid (nil: uploads are refused, checkers_unavailable);
// now is its clock (time.Now when nil).
func NewLibrary(st store.Store, valid Validator, now func() time.Time) *Library {
	if now == nil {
		now = time.Now
	}
	return &Library{st: st, valid: valid, now: now}
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Put validates a checker of the given kind and stores it by the SHA-256
// of its bytes. Storing a checker that is already stored answers its
// metadata again (Reply.Created false).
//
// # Errors
//
// unsupported_checker_kind for a kind other than wasm or python,
// checker_too_large, invalid_checker when the Validator rejects the module
// (nothing is stored), checkers_unavailable when there is no Validator;
// idempotency_conflict.
func (l *Library) Put(ctx context.Context, kind string, module []byte, ik idem.Request) (idem.Reply, error) {
	switch {
	case kind != checkers.KindWasm && kind != checkers.KindPython:
		return idem.Reply{}, fault.New(fault.Invalid, ECodeUnsupportedKind, "checker kind %q is not supported; send a wasm module as application/wasm or Python source as text/x-python", kind)
	case len(module) == 0:
		return idem.Reply{}, fault.New(fault.Invalid, ECodeInvalidChecker, "the request body must be the checker's bytes")
	case len(module) > MaxCheckerBytes:
		return idem.Reply{}, fault.New(fault.TooLarge, ECodeCheckerTooLarge, "a checker is at most %d bytes", MaxCheckerBytes)
	case l.valid == nil:
		return idem.Reply{}, fault.New(fault.Unavailable, ECodeCheckersUnavailable, "this server runs no sandbox")
	}
	sum := checkers.SHA256(module)
	if info, err := l.Info(ctx, sum); err == nil {
		body, _ := json.Marshal(info)
		return idem.Mutate(ctx, l.st, ik, func(store.Tx) (idem.Reply, error) { return idem.Reply{Body: body}, nil })
	}
	if err := l.valid.Validate(ctx, kind, module); err != nil {
		if ctx.Err() != nil {
			return idem.Reply{}, ctx.Err()
		}
		return idem.Reply{}, fault.New(fault.Invalid, ECodeInvalidChecker, "%v", err)
	}
	info := checkers.Info{SHA256: sum, Kind: kind, Size: len(module), CreatedAt: l.now().UTC()}
	return idem.Mutate(ctx, l.st, ik, func(tx store.Tx) (idem.Reply, error) {
		if b, err := tx.Get(checkers.InfoKey(sum)); err == nil {
			return idem.Reply{Body: b}, nil
		}
		body, err := json.Marshal(info)
		if err != nil {
			return idem.Reply{}, err
		}
		if _, err := checkers.PutBytes(tx, module); err != nil {
			return idem.Reply{}, err
		}
		return idem.Reply{Body: body, Created: true}, tx.Set(checkers.InfoKey(sum), body)
	})
}

// Info returns a stored checker's metadata.
//
// # Errors
//
// invalid_sha256 (400), checker_not_found (404).
func (l *Library) Info(ctx context.Context, sum string) (checkers.Info, error) {
	if !sha256Hex.MatchString(sum) {
		return checkers.Info{}, fault.New(fault.Invalid, ECodeInvalidSHA256, "a checker is named by the lowercase hex SHA-256 of its bytes")
	}
	var info checkers.Info
	err := l.st.View(ctx, func(tx store.Tx) error { return store.GetJSON(tx, checkers.InfoKey(sum), &info) })
	if errors.Is(err, store.ErrNotFound) {
		return info, fault.New(fault.NotFound, ECodeCheckerNotFound, "no checker with sha256 %s", sum)
	}
	return info, err
}
