package translog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// MaxAddCheckpoint bounds an add-checkpoint request's body.
const MaxAddCheckpoint = 64 << 10

// WitnessConfig configures NewWitnessServer.
type WitnessConfig struct {
	// Name is the witness's key name, e.g. witness.example/w1.
	Name string
	// Key signs the cosignatures.
	Key ed25519.PrivateKey
	// Logs are the signed-note verifier keys of the logs it witnesses;
	// each key's name is its log's origin.
	Logs []string
	// State is the file where the witness keeps the last checkpoint it
	// cosigned of each log.
	State string
	// Logger gets a line per cosignature and per refusal.
	Logger *slog.Logger
}

// WitnessServer is a C2SP tlog-witness: it cosigns a log's checkpoint only
// if a consistency proof shows that it extends the last checkpoint of that
// log it cosigned, and keeps that one durably before it answers. It
// serves POST /add-checkpoint and the monitoring GET
// /<hex SHA-256 of the origin>/checkpoint.
type WitnessServer struct {
	signer *torchwood.CosignatureSigner
	logs   map[string][]note.Verifier // by origin
	path   string
	log    *slog.Logger

	mu    sync.Mutex // one add-checkpoint at a time: check and persist are one step
	state witnessState
}

// witnessState is the witness's file: by origin, the last checkpoint it
// cosigned, with its cosignature.
type witnessState struct {
	Logs map[string]witnessed `json:"logs"`
}

type witnessed struct {
	Size       int64     `json:"size"`
	Hash       tlog.Hash `json:"hash"`
	Checkpoint string    `json:"checkpoint"`
}

// NewWitnessServer opens the witness's state (a missing file is a witness
// that has cosigned nothing).
//
// # Errors
//
// A bad name, log key or state file.
func NewWitnessServer(cfg WitnessConfig) (*WitnessServer, error) {
	s, err := torchwood.NewCosignatureSigner(cfg.Name, cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("translog: witness: %w", err)
	}
	w := &WitnessServer{signer: s, logs: map[string][]note.Verifier{}, path: cfg.State, log: cfg.Logger,
		state: witnessState{Logs: map[string]witnessed{}}}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	for _, k := range cfg.Logs {
		v, err := note.NewVerifier(k)
		if err != nil {
			return nil, fmt.Errorf("translog: witness: log key %q: %w", k, err)
		}
		w.logs[v.Name()] = append(w.logs[v.Name()], v)
	}
	b, err := os.ReadFile(cfg.State)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("translog: witness state: %w", err)
	default:
		if err := json.Unmarshal(b, &w.state); err != nil {
			return nil, fmt.Errorf("translog: witness state %s: %w", cfg.State, err)
		}
		if w.state.Logs == nil {
			w.state.Logs = map[string]witnessed{}
		}
	}
	return w, nil
}

// VerifierKey is the witness's cosignature key (type 0x04), what a log
// and a verifier pin.
func (w *WitnessServer) VerifierKey() string { return w.signer.Verifier().String() }

// ServeHTTP serves the witness's two routes.
func (w *WitnessServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/add-checkpoint" && r.Method == http.MethodPost:
		w.addCheckpoint(rw, r)
	case strings.HasSuffix(r.URL.Path, "/checkpoint") && r.Method == http.MethodGet:
		w.checkpoint(rw, strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), "/checkpoint"))
	default:
		http.Error(rw, "not found: POST /add-checkpoint, GET /<origin hash>/checkpoint", http.StatusNotFound)
	}
}

func (w *WitnessServer) checkpoint(rw http.ResponseWriter, originHash string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for origin, s := range w.state.Logs {
		sum := sha256.Sum256([]byte(origin))
		if hex.EncodeToString(sum[:]) == originHash {
			rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(rw, s.Checkpoint)
			return
		}
	}
	http.Error(rw, "this witness has cosigned no checkpoint of that log", http.StatusNotFound)
}

// refusal is an add-checkpoint's refusal: a status and why.
type refusal struct {
	status int
	why    string
}

func (e *refusal) Error() string { return e.why }

func refuse(status int, format string, args ...any) error {
	return &refusal{status: status, why: fmt.Sprintf(format, args...)}
}

func (w *WitnessServer) addCheckpoint(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxAddCheckpoint+1))
	if err != nil {
		return
	}
	sigs, size, err := w.Add(body)
	var ref *refusal
	switch {
	case err == nil:
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		rw.Write(sigs)
	case errors.As(err, &ref) && ref.status == http.StatusConflict:
		w.log.Info("witness: add-checkpoint refused", "status", ref.status, "why", ref.why)
		rw.Header().Set("Content-Type", "text/x.tlog.size")
		rw.WriteHeader(http.StatusConflict)
		fmt.Fprintf(rw, "%d\n", size)
	case errors.As(err, &ref):
		w.log.Warn("witness: add-checkpoint refused", "status", ref.status, "why", ref.why)
		http.Error(rw, ref.why, ref.status)
	default:
		w.log.Error("witness", "err", err)
		http.Error(rw, "internal error", http.StatusInternalServerError)
	}
}

// Add handles an add-checkpoint request's body: it returns the
// cosignature lines, or a refusal whose status the protocol fixes (400
// malformed, 403 not signed by the log, 404 unknown log, 409 with the
// size the witness holds when the old size is not it, 422 when the
// checkpoint does not extend that one).
func (w *WitnessServer) Add(body []byte) ([]byte, int64, error) {
	if len(body) > MaxAddCheckpoint {
		return nil, 0, refuse(http.StatusBadRequest, "the request is larger than %d bytes", MaxAddCheckpoint)
	}
	head, cp, ok := bytes.Cut(body, []byte("\n\n"))
	if !ok {
		return nil, 0, refuse(http.StatusBadRequest, "want an old size line, proof lines, an empty line and a checkpoint")
	}
	lines := strings.Split(string(head), "\n")
	oldText, ok := strings.CutPrefix(lines[0], "old ")
	old, err := strconv.ParseInt(oldText, 10, 64)
	if !ok || err != nil || old < 0 || strconv.FormatInt(old, 10) != oldText {
		return nil, 0, refuse(http.StatusBadRequest, "the first line must be old <size>")
	}
	var proof tlog.TreeProof
	for _, l := range lines[1:] {
		h, err := base64.StdEncoding.DecodeString(l)
		if err != nil || len(h) != tlog.HashSize || len(proof) == 63 {
			return nil, 0, refuse(http.StatusBadRequest, "a consistency proof line is not a base64 hash, or there are more than 63")
		}
		proof = append(proof, tlog.Hash(h))
	}
	text, _, _ := bytes.Cut(cp, []byte("\n\n"))
	origin, _, _ := bytes.Cut(text, []byte("\n"))
	verifiers, known := w.logs[string(origin)]
	if !known {
		return nil, 0, refuse(http.StatusNotFound, "this witness does not witness the log %q", origin)
	}
	n, err := note.Open(cp, note.VerifierList(verifiers...))
	if err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		if errors.As(err, &unverified) || errors.As(err, &invalid) {
			return nil, 0, refuse(http.StatusForbidden, "the checkpoint is not signed by the log's key: %v", err)
		}
		return nil, 0, refuse(http.StatusBadRequest, "the checkpoint is not a signed note: %v", err)
	}
	c, err := torchwood.ParseCheckpoint(n.Text)
	if err != nil || c.Origin != string(origin) {
		return nil, 0, refuse(http.StatusBadRequest, "not a checkpoint: %v", err)
	}
	if old > c.N {
		return nil, 0, refuse(http.StatusBadRequest, "old size %d is larger than the checkpoint's %d", old, c.N)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	last := w.state.Logs[c.Origin]
	if old != last.Size {
		return nil, last.Size, refuse(http.StatusConflict, "old size %d, but the last checkpoint cosigned has size %d", old, last.Size)
	}
	switch {
	case c.N == 0:
		if c.Hash != emptyHash() {
			return nil, 0, refuse(http.StatusUnprocessableEntity, "a checkpoint of size 0 must have the empty tree's root")
		}
	case old == 0:
		if len(proof) != 0 {
			return nil, 0, refuse(http.StatusUnprocessableEntity, "a proof from size 0 must be empty")
		}
	case old == c.N:
		if c.Hash != last.Hash {
			return nil, 0, refuse(http.StatusUnprocessableEntity, "a checkpoint of size %d with another root than the one cosigned: a fork", c.N)
		}
	default:
		if err := tlog.CheckTree(proof, c.N, c.Hash, old, last.Hash); err != nil {
			return nil, 0, refuse(http.StatusUnprocessableEntity, "the checkpoint of size %d does not extend the one of size %d cosigned: %v", c.N, old, err)
		}
	}
	signed, err := note.Sign(&note.Note{Text: n.Text}, w.signer)
	if err != nil {
		return nil, 0, err
	}
	sig := signed[len(n.Text)+1:]
	next := witnessed{Size: c.N, Hash: c.Hash, Checkpoint: string(cp) + string(sig)}
	if err := w.persist(c.Origin, next); err != nil {
		return nil, 0, err
	}
	w.log.Info("witness: cosigned", "origin", c.Origin, "size", c.N)
	return sig, c.N, nil
}

// persist records next as origin's last cosigned checkpoint: the state
// file rewritten atomically and synced before Add answers.
func (w *WitnessServer) persist(origin string, next witnessed) error {
	st := witnessState{Logs: make(map[string]witnessed, len(w.state.Logs)+1)}
	for k, v := range w.state.Logs {
		st.Logs[k] = v
	}
	st.Logs[origin] = next
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := WriteFileAtomic(w.path, append(b, '\n'), 0o600); err != nil {
		return err
	}
	w.state = st
	return nil
}

// WriteFileAtomic writes data to path through a synced temporary file
// renamed over it, and syncs the directory.
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
