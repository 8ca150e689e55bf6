package store

// Bounded returns tx with its reads counted: each key a Scan visits, each
// Get, each key of a GetMany is one record examined, and the read that
// would examine more than max returns over instead (a Scan stops with
// it). It is the work bound of a read that scans (a market browse or
// search): the same request over the same records always stops at the
// same point. Writes pass through uncounted.
func Bounded(tx Tx, max int, over error) Tx {
	return &bounded{Tx: tx, left: max, over: over}
}

type bounded struct {
	Tx
	left int
	over error
}

func (b *bounded) take(n int) error {
	if n > b.left {
		b.left = 0
		return b.over
	}
	b.left -= n
	return nil
}

func (b *bounded) Get(key string) ([]byte, error) {
	if err := b.take(1); err != nil {
		return nil, err
	}
	return b.Tx.Get(key)
}

func (b *bounded) Scan(prefix string, reverse bool, fn func(key string, value []byte) error) error {
	return b.Tx.Scan(prefix, reverse, func(k string, v []byte) error {
		if err := b.take(1); err != nil {
			return err
		}
		return fn(k, v)
	})
}

// GetMany keeps the underlying transaction's one exchange.
func (b *bounded) GetMany(keys ...string) ([][]byte, error) {
	if err := b.take(len(keys)); err != nil {
		return nil, err
	}
	return b.Tx.GetMany(keys...)
}
