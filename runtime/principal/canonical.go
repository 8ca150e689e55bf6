package principal

import (
	"encoding/json"
	"fmt"

	"github.com/mtibben/confusables"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/store"
)

// ECodePrincipalConfusable is the code of a registration refused because
// its id can be taken for one registered already.
const ECodePrincipalConfusable = "principal_confusable"

// Canonical is the form in which ids are compared: case folded, in
// Unicode compatibility form, and reduced to its skeleton (Unicode
// Technical Standard #39), so that "Alice", "ALICE" and a Cyrillic
// "аlice" all read as "alice". Two ids with one canonical form look
// alike to a person, and only one of them is registered.
func Canonical(id string) string {
	return confusables.Skeleton(cases.Fold().String(norm.NFKC.String(id)))
}

// checkNFC refuses an id that is not in Unicode NFC, the one form in
// which ids are stored, so that two spellings of one text are one id.
func checkNFC(field, id string) error {
	if !norm.NFC.IsNormalString(id) {
		return invalidPrincipal("%s must be in Unicode NFC (composed) form: %q is %q once composed", field, id, norm.NFC.String(id))
	}
	return nil
}

// unconfusable refuses id when an id registered already (a principal's
// key id, or the agent of an API key) differs from it and has its
// canonical form. The same id again is no confusion: an agent may hold a
// key and an API key.
func unconfusable(tx store.Tx, id string) error {
	want := Canonical(id)
	check := func(other string) error {
		if other != id && Canonical(other) == want {
			return fault.New(fault.Conflict, ECodePrincipalConfusable,
				"%q can be taken for %q, registered already: ids are compared case folded and by their Unicode skeleton (docs/identity.md)", id, other)
		}
		return nil
	}
	for _, scan := range []struct {
		prefix string
		id     func([]byte) (string, error)
	}{
		{keyPrincipal, func(v []byte) (string, error) { var p Principal; err := json.Unmarshal(v, &p); return p.KeyID, err }},
		{keyAPIKey, func(v []byte) (string, error) { var k APIKey; err := json.Unmarshal(v, &k); return k.Agent, err }},
	} {
		err := tx.Scan(scan.prefix, false, func(k string, v []byte) error {
			other, err := scan.id(v)
			if err != nil {
				return fmt.Errorf("principal: decode %s: %w", k, err)
			}
			return check(other)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
