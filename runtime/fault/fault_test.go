package fault_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/runtime/fault"
)

// Interface guards: adjudicate's errors are read as fault errors.
var (
	_ fault.Coded = (*fault.Error)(nil)
	_ fault.Coded = (*adjudicate.Error)(nil)
)

func TestAs(t *testing.T) {
	_, criteriaErr := adjudicate.Compile([]byte(`{"schema":{"type":"object","patternProperties":{}}}`))
	_, deliverableErr := adjudicate.ParseDeliverable([]byte(`{"rows":`))
	own := fault.New(fault.Conflict, "contract_not_funded", "fund the contract first")
	for _, tc := range []struct {
		name          string
		err           error
		kind          fault.Kind
		code, message string
	}{
		{"OK", own, fault.Conflict, "contract_not_funded", "fund the contract first"},
		{"OKWrapped", fmt.Errorf("escrow: %w", own), fault.Conflict, "contract_not_funded", "fund the contract first"},
		{"OKOuterFirst", fault.Wrap(fault.Internal, "internal", criteriaErr), fault.Internal, "internal", criteriaErr.Error()},
		{"Adjudicate", criteriaErr, fault.Invalid, adjudicate.EInvalidSchema, messageOf(criteriaErr)},
		{"AdjudicateWrapped", fmt.Errorf("plan: %w", deliverableErr), fault.Invalid, adjudicate.EInvalidDeliverable, messageOf(deliverableErr)},
		{"AdjudicateInternal", &adjudicate.Error{Code: adjudicate.EInternal, Message: "broken"}, fault.Internal, adjudicate.EInternal, "broken"},
		{"ErrOther", errors.New("disk on fire"), fault.Internal, "internal", "internal error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("no error to read")
			}
			if k, c, m := fault.KindOf(tc.err), fault.CodeOf(tc.err), fault.MessageOf(tc.err); k != tc.kind || c != tc.code || m != tc.message {
				t.Fatalf("read %q %q %q, want %q %q %q", k, c, m, tc.kind, tc.code, tc.message)
			}
			e, ok := fault.As(tc.err)
			if ok != (tc.name != "ErrOther") {
				t.Fatalf("As: %v", ok)
			}
			var ae *adjudicate.Error
			if ok && errors.As(tc.err, &ae) && !errors.Is(e, ae) {
				t.Errorf("As(%v) = %v does not keep its cause", tc.err, e)
			}
		})
	}
	if fault.KindOf(nil) != "" || fault.CodeOf(nil) != "" {
		t.Error("nil reads as an error")
	}
}

func messageOf(err error) string {
	var e *adjudicate.Error
	if !errors.As(err, &e) {
		return ""
	}
	return e.Message
}

func TestWithin(t *testing.T) {
	_, err := adjudicate.ParseDeliverable([]byte(`{"rows":`))
	got := fault.Within("acceptance", err)
	if fault.KindOf(got) != fault.Invalid || fault.CodeOf(got) != adjudicate.EInvalidDeliverable || fault.MessageOf(got) != "acceptance: "+messageOf(err) || !errors.Is(got, err) {
		t.Fatalf("Within: %v", got)
	}
	other := errors.New("disk on fire")
	if fault.Within("acceptance", other) != other {
		t.Fatal("Within coded an uncoded error")
	}
}
