package escrow

import (
	"encoding/json"

	"github.com/assayhq/assay/runtime/store"
)

// StoredDelivery returns contract id's delivery as stored, in the JSON
// the checkers are handed it from.
func StoredDelivery(tx store.Tx, id string) ([]byte, error) {
	var cs contracts
	r, err := cs.load(tx, id)
	if err != nil {
		return nil, err
	}
	if err := cs.loadDelivery(tx, r); err != nil {
		return nil, err
	}
	return r.delivery.encode(), nil
}

// StoredAdjudication returns the adjudication recorded for contract id, as
// JSON (null before a dispute was judged).
func StoredAdjudication(tx store.Tx, id string) ([]byte, error) {
	var cs contracts
	r, err := cs.load(tx, id)
	if err != nil {
		return nil, err
	}
	if r.adjudication == nil {
		return []byte("null"), nil
	}
	return jsonOf(r.adjudication)
}

// ChangeStored changes contract id as stored, behind any Service's back
// (as another node or a restore from a backup would).
func ChangeStored(tx store.Tx, id string, change func(*Contract)) error {
	var cs contracts
	r, err := cs.load(tx, id)
	if err != nil {
		return err
	}
	change(&r.Contract)
	return cs.save(tx, nil, r)
}

func jsonOf(v any) ([]byte, error) { return json.Marshal(v) }
