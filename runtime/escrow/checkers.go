package escrow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/store"
)

// CheckerInfo is a stored checker's metadata.
type CheckerInfo struct {
	SHA256    string    `json:"sha256"`
	Kind      string    `json:"kind"`
	Size      int       `json:"size"`
	CreatedAt time.Time `json:"created_at"`
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// PutChecker validates a checker of the given kind and stores it by the
// SHA-256 of its bytes. Storing a checker that is already stored answers
// its metadata again (Reply.Created false).
//
// # Errors
//
// unsupported_checker_kind for a kind other than wasm or python, checker_too_large,
// invalid_checker when the sandbox rejects the module (nothing is
// stored), checkers_unavailable when there is no sandbox.
func (s *Service) PutChecker(ctx context.Context, kind string, module []byte, idem Idem) (Reply, error) {
	if r, err := s.replay(ctx, idem); err != nil || r != nil {
		return deref(r), err
	}
	switch {
	case kind != checkers.KindWasm && kind != checkers.KindPython:
		return Reply{}, fault.New(fault.Invalid, "unsupported_checker_kind", "checker kind %q is not supported; send a wasm module as application/wasm or Python source as text/x-python", kind)
	case len(module) == 0:
		return Reply{}, fault.New(fault.Invalid, "invalid_checker", "the request body must be the checker's bytes")
	case len(module) > MaxCheckerBytes:
		return Reply{}, fault.New(fault.TooLarge, "checker_too_large", "a checker is at most %d bytes", MaxCheckerBytes)
	case s.sandbox == nil:
		return Reply{}, fault.New(fault.Unavailable, "checkers_unavailable", "this server runs no sandbox")
	}
	sum := checkers.SHA256(module)
	if info, err := s.Checker(ctx, sum); err == nil {
		body, _ := json.Marshal(info)
		return s.mutate(ctx, idem, func(store.Tx) (Reply, error) { return Reply{Body: body}, nil })
	}
	if err := checkers.Validate(ctx, s.sandbox, kind, module); err != nil {
		if ctx.Err() != nil {
			return Reply{}, ctx.Err()
		}
		return Reply{}, fault.New(fault.Invalid, "invalid_checker", "%v", err)
	}
	info := CheckerInfo{SHA256: sum, Kind: kind, Size: len(module), CreatedAt: s.now().UTC()}
	return s.mutate(ctx, idem, func(tx store.Tx) (Reply, error) {
		if b, err := tx.Get(checkerKey(sum)); err == nil {
			return Reply{Body: b}, nil
		}
		body, err := json.Marshal(info)
		if err != nil {
			return Reply{}, err
		}
		if err := tx.Set(checkerBytesKey(sum), module); err != nil {
			return Reply{}, err
		}
		return Reply{Body: body, Created: true}, tx.Set(checkerKey(sum), body)
	})
}

// Checker returns a stored checker's metadata.
func (s *Service) Checker(ctx context.Context, sum string) (CheckerInfo, error) {
	if !sha256Hex.MatchString(sum) {
		return CheckerInfo{}, fault.New(fault.Invalid, "invalid_sha256", "a checker is named by the lowercase hex SHA-256 of its bytes")
	}
	var info CheckerInfo
	err := s.st.View(ctx, func(tx store.Tx) error { return store.GetJSON(tx, checkerKey(sum), &info) })
	if errors.Is(err, store.ErrNotFound) {
		return info, fault.New(fault.NotFound, "checker_not_found", "no checker with sha256 %s", sum)
	}
	return info, err
}

// Checkers returns the stored checkers as a checkers.Source, for a
// checkers.Runner.
func (s *Service) Checkers() checkers.Source { return source{s.st} }

type source struct{ st store.Store }

var _ checkers.Source = source{}

// Checker implements checkers.Source.
func (src source) Checker(sum string) ([]byte, error) {
	var b []byte
	err := src.st.View(context.Background(), func(tx store.Tx) error {
		var err error
		b, err = tx.Get(checkerBytesKey(sum))
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", checkers.ErrNotFound, sum)
	}
	return b, err
}

func deref(r *Reply) Reply {
	if r == nil {
		return Reply{}
	}
	return *r
}
