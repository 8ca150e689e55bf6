package receipt

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
)

// LogKeyFile is where the transparency log's key lives, beside the
// court's keys: <dir>/keys/log-ed25519.json.
const (
	LogKeyFile   = "log-ed25519.json"
	logKeyFormat = "assay-log-key/v1"
)

// ErrLogOrigin means the log key on disk was made for another origin than
// the one asked for: a log's origin names it for its whole life, in every
// checkpoint and in its witnesses' records.
var ErrLogOrigin = errors.New("receipt: the log key was made for another origin")

// LogKeyConfig configures OpenLogKey.
type LogKeyConfig struct {
	// Dir is the keys' data directory, as KeyringConfig.Dir.
	Dir string
	// Origin is the log's checkpoint origin (C2SP tlog-checkpoint), also
	// its key's name. Empty: the one on disk, or for a new key
	// "assay.local/log/<8 hex digits>" with digits from Rand.
	Origin string
	// Rand makes the key; crypto/rand.Reader in production.
	Rand io.Reader
}

// LogKey is the transparency log's Ed25519 key, as a C2SP signed-note
// signer whose name is the log's origin.
type LogKey struct {
	origin   string
	signer   note.Signer
	verifier string
}

// logKeyFile is the key file's JSON: the signed-note encodings of the
// private and public key (x/mod/sumdb/note's skey and vkey).
type logKeyFile struct {
	Format   string `json:"format"`
	Origin   string `json:"origin"`
	Signer   string `json:"signer_key"`
	Verifier string `json:"verifier_key"`
}

// OpenLogKey loads the log key in cfg.Dir, creating it (mode 0600) when
// there is none. Nodes that share a keys directory share the key: one made
// at once by several is made once.
//
// # Errors
//
// ErrLogOrigin when cfg.Origin is set and differs from the key's;
// ErrKeyFileMode when the file is open to group or others; an error
// naming the file when it does not parse; a bad origin.
func OpenLogKey(cfg LogKeyConfig) (*LogKey, error) {
	if cfg.Dir == "" || cfg.Rand == nil {
		panic("receipt: LogKeyConfig needs Dir and Rand")
	}
	path := filepath.Join(cfg.Dir, KeysDir, LogKeyFile)
	k, err := loadLogKey(path)
	if errors.Is(err, fs.ErrNotExist) {
		k, err = createLogKey(path, cfg)
	}
	if err != nil {
		return nil, err
	}
	if cfg.Origin != "" && cfg.Origin != k.origin {
		return nil, fmt.Errorf("%w: %s is the key of %q, not of %q; a log's origin is fixed when its key is made", ErrLogOrigin, path, k.origin, cfg.Origin)
	}
	return k, nil
}

// Origin is the log's checkpoint origin.
func (k *LogKey) Origin() string { return k.origin }

// Signer signs checkpoints.
func (k *LogKey) Signer() note.Signer { return k.signer }

// VerifierKey is the key's public signed-note encoding,
// "<origin>+<key hash>+<base64 key>": what verifiers and witnesses pin.
func (k *LogKey) VerifierKey() string { return k.verifier }

// ValidOrigin reports whether s may be a log's origin: a non-empty name of
// at most 255 bytes with no spaces and no plus sign, as signed-note key
// names are.
func ValidOrigin(s string) error {
	if s == "" || len(s) > 255 || strings.ContainsFunc(s, unicode.IsSpace) || strings.Contains(s, "+") || !utf8.ValidString(s) {
		return fmt.Errorf("receipt: a log origin is 1 to 255 bytes of UTF-8 without spaces or '+', like example.com/log, not %q", s)
	}
	return nil
}

func createLogKey(path string, cfg LogKeyConfig) (*LogKey, error) {
	origin := cfg.Origin
	if origin == "" {
		var b [4]byte
		if _, err := io.ReadFull(cfg.Rand, b[:]); err != nil {
			return nil, fmt.Errorf("receipt: log origin: %w", err)
		}
		origin = "assay.local/log/" + hex.EncodeToString(b[:])
	}
	if err := ValidOrigin(origin); err != nil {
		return nil, err
	}
	skey, vkey, err := note.GenerateKey(cfg.Rand, origin)
	if err != nil {
		return nil, fmt.Errorf("receipt: log key: %w", err)
	}
	data, err := json.MarshalIndent(logKeyFile{Format: logKeyFormat, Origin: origin, Signer: skey, Verifier: vkey}, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeFileExclusive(path, append(data, '\n')); errors.Is(err, fs.ErrExist) {
		return loadLogKey(path)
	} else if err != nil {
		return nil, err
	}
	return loadLogKey(path)
}

func loadLogKey(path string) (*LogKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o", ErrKeyFileMode, path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("receipt: log key: %w", err)
	}
	var f logKeyFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("receipt: log key %s: %w", path, err)
	}
	if f.Format != logKeyFormat {
		return nil, fmt.Errorf("receipt: log key %s: format %q, want %q", path, f.Format, logKeyFormat)
	}
	signer, err := note.NewSigner(f.Signer)
	if err != nil {
		return nil, fmt.Errorf("receipt: log key %s: signer_key: %w", path, err)
	}
	v, err := note.NewVerifier(f.Verifier)
	if err != nil || v.Name() != f.Origin || signer.Name() != f.Origin || v.KeyHash() != signer.KeyHash() {
		return nil, fmt.Errorf("receipt: log key %s: verifier_key does not match signer_key and origin", path)
	}
	return &LogKey{origin: f.Origin, signer: signer, verifier: f.Verifier}, nil
}

// writeFileExclusive writes data to path (mode 0600, directory 0700)
// durably, failing with fs.ErrExist when the file is there already.
func writeFileExclusive(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("receipt: keys directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".log-key-*.tmp")
	if err != nil {
		return fmt.Errorf("receipt: log key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("receipt: log key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("receipt: log key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("receipt: log key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}
