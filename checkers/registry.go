package checkers

import (
	"context"
	"fmt"
	"time"
)

// The registry's key layout (storage/doc.go lists it with the rest):
// a checker's bytes under checker-bytes/<sha256>, its metadata (Info) under
// checker/<sha256>. Python checker sources that the market kept before the
// registry was one store sit under market/checker/<sha256>; the Registry
// still finds them there.
const (
	keyInfo   = "checker/"
	keyBytes  = "checker-bytes/"
	keyLegacy = "market/checker/"
)

// InfoKey is the key of a checker's metadata (Info, as JSON).
func InfoKey(sum string) string { return keyInfo + sum }

// BytesKey is the key of a checker's bytes.
func BytesKey(sum string) string { return keyBytes + sum }

// Info is a stored checker's metadata.
type Info struct {
	SHA256    string    `json:"sha256"`
	Kind      string    `json:"kind"`
	Size      int       `json:"size"`
	CreatedAt time.Time `json:"created_at"`
}

// Setter is the part of a store's transaction that writes a key; the
// services' store transactions (runtime/store.Tx) have it.
type Setter interface {
	Set(key string, value []byte) error
}

// PutBytes writes module's bytes into the registry under its SHA-256,
// inside the caller's transaction, and returns the SHA-256. The metadata
// is the caller's to write (InfoKey), when it keeps any.
func PutBytes(tx Setter, module []byte) (string, error) {
	sum := SHA256(module)
	return sum, tx.Set(BytesKey(sum), module)
}

// Blobs is the key-value store a Registry reads: the services' store,
// adapted by runtime/replays.Blobs. It is declared here so that checkers
// depends on no storage package.
type Blobs interface {
	// Get returns the value of key; found is false, with a nil error,
	// when there is none.
	Get(ctx context.Context, key string) (value []byte, found bool, err error)
}

// Registry is the content-addressed store of checkers, wasm modules and
// Python sources alike, found by the SHA-256 of their bytes. It is a
// Source. It is safe for concurrent use when its Blobs is.
type Registry struct {
	kv Blobs
}

var _ Source = (*Registry)(nil)

// NewRegistry returns the Registry kept in kv.
func NewRegistry(kv Blobs) *Registry { return &Registry{kv: kv} }

// Checker implements Source: the bytes under BytesKey, or a python
// checker's source where the market used to keep it.
func (r *Registry) Checker(sum string) ([]byte, error) {
	ctx := context.Background()
	for _, key := range []string{BytesKey(sum), keyLegacy + sum} {
		b, ok, err := r.kv.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		if ok {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrNotFound, sum)
}
