package guest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"syscall"
	"unicode/utf8"
)

// Check decides one case: it returns nil when the artifact meets the check
// and an error saying why when it does not. Evidence is nil when the case
// has none.
type Check func(artifact, evidence []byte) error

// Statuses assay_check returns.
const (
	statusPass   = 0
	statusFail   = 1 // the check returned an error
	statusBroken = 2 // the check panicked, or there was no check or no input
)

// maxMessage bounds what one call writes to stderr for an error or a panic.
const maxMessage = 4 << 10

// registered is the check set by Handle.
var registered Check

// Handle registers check as the checker's check. Call it from an init
// function of package main, so that it runs during _initialize.
//
// # Notes
//
// Handle panics when check is nil or when a check is already registered: a
// module with no check, or with two, is a mistake of its author, and the
// panic in _initialize rejects it before it judges anything.
func Handle(check Check) {
	switch {
	case check == nil:
		panic("guest: Handle(nil)")
	case registered != nil:
		panic("guest: Handle called twice")
	}
	registered = check
}

// env is where a call reads its input and writes its messages; tests give
// their own.
type env struct {
	dir    string // the input directory, /in in the sandbox
	stdin  io.Reader
	stderr io.Writer
}

// call reads the input afresh, runs check on it and returns the status,
// reporting an error or a panic on stderr.
func (e env) call(check Check) (status int32) {
	if check == nil {
		e.report("guest: no check registered: call guest.Handle from an init function of package main")
		return statusBroken
	}
	artifact, evidence, err := e.read()
	if err != nil {
		e.report("guest: " + err.Error())
		return statusBroken
	}
	defer func() {
		if v := recover(); v != nil {
			e.report(fmt.Sprintf("panic: %v", v))
			status = statusBroken
		}
	}()
	if err := check(artifact, evidence); err != nil {
		msg := err.Error()
		if msg == "" {
			msg = "the check failed with an empty error message"
		}
		e.report(msg)
		return statusFail
	}
	return statusPass
}

// read returns the artifact, from dir/artifact or else stdin, and the
// evidence, nil when dir/evidence does not exist.
func (e env) read() (artifact, evidence []byte, err error) {
	artifact, err = readFile(e.dir + "/artifact")
	if errors.Is(err, fs.ErrNotExist) {
		if artifact, err = io.ReadAll(e.stdin); err != nil {
			return nil, nil, fmt.Errorf("read the artifact from stdin: %w", err)
		}
	} else if err != nil {
		return nil, nil, fmt.Errorf("read the artifact: %w", err)
	}
	if artifact == nil {
		artifact = []byte{}
	}
	evidence, err = readFile(e.dir + "/evidence")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return artifact, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("read the evidence: %w", err)
	case evidence == nil:
		evidence = []byte{}
	}
	return artifact, evidence, nil
}

// report writes msg and a newline to stderr, cut to maxMessage bytes at a
// character boundary. A failed write is ignored: the status still says how
// the call ended.
func (e env) report(msg string) {
	if len(msg) > maxMessage {
		const more = " [cut]"
		cut := maxMessage - len(more)
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + more
	}
	_, _ = io.WriteString(e.stderr, msg+"\n")
}

// readFile is os.ReadFile without an *os.File: on wasip1 a File costs a
// kind probe, a poller check and a cleanup, most of what reading a small
// input costs a replay. The result is never nil when err is nil.
func readFile(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	buf := make([]byte, 0, max(int(st.Size), 0)+1) // +1: the read that sees the end
	for {
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}
