// Package guest is the Go side of the reactor form of the checker ABI: a Go
// author writes the check as a function and gets a module that exports
// assay_check.
//
// The shortest correct checker:
//
//	//go:build wasip1
//
//	package main
//
//	import (
//		"errors"
//
//		"github.com/assayhq/assay/checkers/guest"
//	)
//
//	func init() { guest.Handle(check) }
//
//	func main() {}
//
//	func check(artifact, evidence []byte) error {
//		if len(artifact) == 0 {
//			return errors.New("empty artifact")
//		}
//		return nil
//	}
//
// built as a reactor with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o check.wasm .
//
// The module then exports _initialize, which starts the Go runtime and runs
// every init function (Handle included), and assay_check, which this package
// defines with //go:wasmexport: importing the package is what exports it.
// In this build mode main is never called, so it stays empty. Built without
// -buildmode=c-shared the module would export both _start and assay_check,
// and the sandbox rejects such a module as invalid_checker: a forgotten flag
// cannot give a checker whose empty main passes every artifact.
//
// # One process per replay
//
// The sandbox runs _initialize once per checker, with no input (an empty
// stdin and an empty /in), and snapshots linear memory and globals; every
// replay starts a fresh instance from that snapshot and calls assay_check
// once. So work done in init functions is paid once per checker, not once
// per replay: compile regular expressions and build tables there, and
// decode a sample into the check's types once, since encoding/json builds
// its cache for a type on first use (about 600,000 instructions for a small
// struct, which every replay would otherwise repeat). Init functions must
// not read the input: there is none at that time. Each call
// of assay_check reads its input afresh, so a module called twice in one
// instance still judges each call's own input; a check function should keep
// no state between calls either.
//
// # What assay_check does
//
//   - It reads the artifact from /in/artifact, or from stdin when there is no
//     /in/artifact, and the evidence from /in/evidence; evidence is nil when
//     the case has none (and empty, not nil, when it has an empty one).
//   - It calls the check function. A nil error returns status 0, a pass.
//   - An error writes its message and a newline to stderr, cut to 4 KiB, and
//     returns status 1, a fail.
//   - A panic in the check is recovered: "panic: " and its value go to
//     stderr, cut the same way, and the status is 2, a fail. Status 2 also
//     means that no check was registered or that the input could not be
//     read.
//
// The check may also write to stdout and stderr itself; what it writes is
// captured as the command form's output is.
package guest
