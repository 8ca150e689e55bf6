package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/assayhq/assay/runtime/store"
)

// EntryFormat is the first line of every transparency log entry.
const EntryFormat = "assay-receipt/v1"

// PendingPrefix starts the keys of receipts that Put recorded for the
// transparency log and the log has not integrated yet:
// tlog/pending/<unixnano:020d>-<id> holds the receipt's Entry, by when
// the receipt was signed. The log
// (runtime/translog) owns every other tlog/ key.
const PendingPrefix = "tlog/pending/"

// ErrBadEntry is what ParseEntry's error wraps for bytes that are not an
// entry of EntryFormat.
var ErrBadEntry = errors.New("receipt: not a log entry")

// Entry is a receipt as the transparency log records it: what a receipt is
// (its id, kind and issue time) and what pins its signed bytes (the hash
// of its canonical subject, the key and the signature), never the subject
// itself, so that the public log names no party. Supersedes names the
// receipt this one overturns (an operator's resolution of an escalated
// dispute, an appeal that overturned a verdict); it is the log's statement,
// outside the receipt's signed bytes.
//
// Its bytes (Marshal) are lines, each ending in a newline:
//
//	assay-receipt/v1
//	id 7d6a250e86c842be
//	kind AssayVerdict
//	issued 2026-05-01T12:00:00Z
//	subject <hex SHA-256 of the canonical credentialSubject: proof.subjectHash>
//	key <base64 Ed25519 public key: proof.publicKey>
//	signature <base64 signature: proof.signature>
//	supersedes <id>                (only when it supersedes one)
type Entry struct {
	ID          string
	Kind        string
	Issued      string
	SubjectHash string
	PublicKey   string
	Signature   string
	Supersedes  string
}

// EntryOf is r's log entry, naming the receipt r supersedes if it was
// made with Superseding.
func EntryOf(r Receipt) Entry {
	return Entry{ID: r.ShortID(), Kind: r.Kind(), Issued: r.IssuanceDate, SubjectHash: r.Proof.SubjectHash,
		PublicKey: r.Proof.PublicKey, Signature: r.Proof.Signature, Supersedes: r.supersedes}
}

// Marshal returns the entry's bytes.
func (e Entry) Marshal() []byte {
	b := make([]byte, 0, 400)
	b = append(b, EntryFormat+"\n"...)
	for _, f := range [][2]string{{"id", e.ID}, {"kind", e.Kind}, {"issued", e.Issued}, {"subject", e.SubjectHash},
		{"key", e.PublicKey}, {"signature", e.Signature}, {"supersedes", e.Supersedes}} {
		if f[1] == "" && f[0] == "supersedes" {
			break
		}
		b = append(append(append(append(b, f[0]...), ' '), f[1]...), '\n')
	}
	return b
}

// ParseEntry reads an entry's bytes, exactly as Marshal writes them.
//
// # Errors
//
// ErrBadEntry, with what is wrong.
func ParseEntry(b []byte) (Entry, error) {
	bad := func(what string) (Entry, error) { return Entry{}, fmt.Errorf("%w: %s", ErrBadEntry, what) }
	text := string(b)
	if !strings.HasSuffix(text, "\n") {
		return bad("it does not end in a newline")
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 7 || len(lines) > 8 || lines[0] != EntryFormat {
		return bad("want the line " + EntryFormat + " and six or seven fields")
	}
	var e Entry
	fields := []struct {
		name string
		v    *string
	}{{"id", &e.ID}, {"kind", &e.Kind}, {"issued", &e.Issued}, {"subject", &e.SubjectHash}, {"key", &e.PublicKey}, {"signature", &e.Signature}, {"supersedes", &e.Supersedes}}
	for i, line := range lines[1:] {
		name, v, ok := strings.Cut(line, " ")
		if !ok || name != fields[i].name || v == "" {
			return bad(fmt.Sprintf("line %d is not %q followed by a value", i+2, fields[i].name))
		}
		*fields[i].v = v
	}
	if !validID(e.ID) || (e.Supersedes != "" && !validID(e.Supersedes)) || !validKind(e.Kind) {
		return bad("a bad id or kind")
	}
	if _, err := time.Parse(timeLayout, e.Issued); err != nil {
		return bad("issued is not a time like 2026-05-01T12:00:00Z")
	}
	if h, err := hex.DecodeString(e.SubjectHash); err != nil || len(h) != 32 || hex.EncodeToString(h) != e.SubjectHash {
		return bad("subject is not 64 lowercase hex digits")
	}
	if k, err := base64.StdEncoding.DecodeString(e.PublicKey); err != nil || len(k) != 32 {
		return bad("key is not base64 of 32 bytes")
	}
	if s, err := base64.StdEncoding.DecodeString(e.Signature); err != nil || len(s) != 64 {
		return bad("signature is not base64 of 64 bytes")
	}
	if !bytes.Equal(e.Marshal(), b) {
		return bad("it is not in its one written form")
	}
	return e, nil
}

// Pins reports whether the entry records r: the same id, kind, issue time,
// subject hash, key and signature. The subject hash is recomputed from r's
// credentialSubject, so a receipt whose proof.subjectHash lies does not
// match.
//
// # Errors
//
// Which field differs.
func (e Entry) Pins(r Receipt) error {
	canon, err := CanonicalJSON(r.CredentialSubject)
	if err != nil {
		return fmt.Errorf("receipt: subject: %w", err)
	}
	got := EntryOf(r)
	got.SubjectHash = hexSHA256(canon)
	for _, f := range [][3]string{{"id", e.ID, got.ID}, {"kind", e.Kind, got.Kind}, {"issued", e.Issued, got.Issued},
		{"subject", e.SubjectHash, got.SubjectHash}, {"key", e.PublicKey, got.PublicKey}, {"signature", e.Signature, got.Signature}} {
		if f[1] != f[2] {
			return fmt.Errorf("receipt: the log entry's %s is %q, the receipt's %q", f[0], f[1], f[2])
		}
	}
	return nil
}

// PinsSubject reports whether the entry records a credential whose
// credentialSubject is subject: what a Data Integrity form of the receipt
// (Keyring.Credential) can be checked against, since it carries the same
// subject under another signature.
func (e Entry) PinsSubject(subject []byte) error {
	canon, err := CanonicalJSON(subject)
	if err != nil {
		return fmt.Errorf("receipt: subject: %w", err)
	}
	if h := hexSHA256(canon); h != e.SubjectHash {
		return fmt.Errorf("receipt: the credential's subject hashes to %s, the log entry's to %s", h, e.SubjectHash)
	}
	return nil
}

// Superseding returns r marked as overturning the receipt whose id (with
// or without IDPrefix) is given: Put records that in r's log entry. The
// receipt's own bytes do not change. An empty id marks nothing.
func (r Receipt) Superseding(id string) Receipt {
	r.supersedes = strings.TrimPrefix(id, IDPrefix)
	return r
}

// SupersedeLast is r.Superseding(the newest of ids whose stored receipt is
// of kind), for a service that keeps a record's receipt ids in order; r
// unchanged when none is.
func SupersedeLast(tx store.Tx, r Receipt, ids []string, kind string) (Receipt, error) {
	for i := len(ids) - 1; i >= 0; i-- {
		b, err := Get(tx, ids[i])
		if err != nil {
			return r, err
		}
		var head struct {
			Type []string `json:"type"`
		}
		if err := json.Unmarshal(b, &head); err != nil {
			return r, err
		}
		if len(head.Type) == 2 && head.Type[1] == kind {
			return r.Superseding(ids[i]), nil
		}
	}
	return r, nil
}

// pendingKey is where Put records r's entry for the log: ordered by when
// it was signed, so that the log integrates receipts about in the order
// they were made.
func pendingKey(at time.Time, id string) string {
	var b strings.Builder
	b.Grow(len(PendingPrefix) + 21 + len(id))
	b.WriteString(PendingPrefix)
	n := strconv.FormatInt(max(at.UnixNano(), 0), 10)
	for range 20 - len(n) {
		b.WriteByte('0')
	}
	b.WriteString(n)
	b.WriteByte('-')
	b.WriteString(id)
	return b.String()
}

// PendingSecond is the prefix of the pending keys of the receipts signed
// in one second (Unix time, by the keyring's clock): a pending key's
// first 11 digits of 20 count whole seconds.
func PendingSecond(unix int64) string {
	n := strconv.FormatInt(max(unix, 0), 10)
	return PendingPrefix + strings.Repeat("0", max(11-len(n), 0)) + n
}

// PendingSigned is when the receipt under a pending key (PendingPrefix)
// was signed, by the keyring's clock; false for a key that is not one.
func PendingSigned(key string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(key, PendingPrefix)
	if !ok || len(rest) < 21 || rest[20] != '-' {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(rest[:20], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, n), true
}

func hexSHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
