package escrow

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/store"
)

// CheckerInfo is a stored checker's metadata, as the checker registry
// keeps it.
type CheckerInfo = checkers.Info

// Checker kinds an upload may be, for the API's content types.
const (
	CheckerWasm   = checkers.KindWasm
	CheckerPython = checkers.KindPython
)

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// PutChecker validates a checker of the given kind and stores it in the
// checker registry (checkers.Registry) by the SHA-256 of its bytes.
// Storing a checker that is already stored answers its metadata again
// (Reply.Created false).
//
// # Errors
//
// unsupported_checker_kind for a kind other than wasm or python, checker_too_large,
// invalid_checker when the Validator rejects the module (nothing is
// stored), checkers_unavailable when there is no Validator.
func (s *Service) PutChecker(ctx context.Context, kind string, module []byte, ik idem.Idem) (Reply, error) {
	if r, err := s.replay(ctx, ik); err != nil || r != nil {
		return deref(r), err
	}
	switch {
	case kind != checkers.KindWasm && kind != checkers.KindPython:
		return Reply{}, fault.New(fault.Invalid, ECodeUnsupportedKind, "checker kind %q is not supported; send a wasm module as application/wasm or Python source as text/x-python", kind)
	case len(module) == 0:
		return Reply{}, fault.New(fault.Invalid, ECodeInvalidChecker, "the request body must be the checker's bytes")
	case len(module) > MaxCheckerBytes:
		return Reply{}, fault.New(fault.TooLarge, ECodeCheckerTooLarge, "a checker is at most %d bytes", MaxCheckerBytes)
	case s.valid == nil:
		return Reply{}, fault.New(fault.Unavailable, ECodeCheckersUnavailable, "this server runs no sandbox")
	}
	sum := checkers.SHA256(module)
	if info, err := s.Checker(ctx, sum); err == nil {
		body, _ := json.Marshal(info)
		return s.mutate(ctx, ik, func(store.Tx) (Reply, error) { return Reply{Body: body}, nil })
	}
	if err := s.valid.Validate(ctx, kind, module); err != nil {
		if ctx.Err() != nil {
			return Reply{}, ctx.Err()
		}
		return Reply{}, fault.New(fault.Invalid, ECodeInvalidChecker, "%v", err)
	}
	info := CheckerInfo{SHA256: sum, Kind: kind, Size: len(module), CreatedAt: s.now().UTC()}
	return s.mutate(ctx, ik, func(tx store.Tx) (Reply, error) {
		if b, err := tx.Get(checkers.InfoKey(sum)); err == nil {
			return Reply{Body: b}, nil
		}
		body, err := json.Marshal(info)
		if err != nil {
			return Reply{}, err
		}
		if _, err := checkers.PutBytes(tx, module); err != nil {
			return Reply{}, err
		}
		return Reply{Body: body, Created: true}, tx.Set(checkers.InfoKey(sum), body)
	})
}

// Checker returns a stored checker's metadata.
func (s *Service) Checker(ctx context.Context, sum string) (CheckerInfo, error) {
	if !sha256Hex.MatchString(sum) {
		return CheckerInfo{}, fault.New(fault.Invalid, ECodeInvalidSHA256, "a checker is named by the lowercase hex SHA-256 of its bytes")
	}
	var info CheckerInfo
	err := s.st.View(ctx, func(tx store.Tx) error { return store.GetJSON(tx, checkers.InfoKey(sum), &info) })
	if errors.Is(err, store.ErrNotFound) {
		return info, fault.New(fault.NotFound, ECodeCheckerNotFound, "no checker with sha256 %s", sum)
	}
	return info, err
}

func deref(r *Reply) Reply {
	if r == nil {
		return Reply{}
	}
	return *r
}
