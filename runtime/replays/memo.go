package replays

import (
	"context"
	"errors"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/store"
)

// keyMemo prefixes memoised outcomes: memo/<key hex> -> the outcome's JSON.
const keyMemo = "memo/"

// MemoStore keeps memoised outcomes on the services' store, so that a
// server's memo survives a restart and is shared by every node on one
// store.
type MemoStore struct {
	st store.Store
}

var _ checkers.MemoStore = (*MemoStore)(nil)

// NewMemoStore returns a MemoStore on st.
func NewMemoStore(st store.Store) *MemoStore { return &MemoStore{st: st} }

// Get implements checkers.MemoStore.
func (m *MemoStore) Get(key checkers.MemoKey) ([]byte, bool, error) {
	var b []byte
	err := m.st.View(context.Background(), func(tx store.Tx) error {
		v, err := tx.Get(keyMemo + key.String())
		b = v
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	return b, err == nil, err
}

// Put implements checkers.MemoStore. Each Put is one durable transaction.
func (m *MemoStore) Put(key checkers.MemoKey, outcome []byte) error {
	return m.st.Update(context.Background(), func(tx store.Tx) error {
		return tx.Set(keyMemo+key.String(), outcome)
	})
}

// NewMemo returns the memo a server's runners use: in memory within
// checkers' default bounds, and persisted in st.
func NewMemo(st store.Store) *checkers.Memo {
	return checkers.NewMemo(checkers.MemoConfig{Store: NewMemoStore(st)})
}
