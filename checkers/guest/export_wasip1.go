//go:build wasip1

package guest

import "os"

// stdio is the environment of the sandbox.
var stdio = env{dir: "/in", stdin: os.Stdin, stderr: os.Stderr}

// assayCheck is the reactor's entry point: the sandbox calls it once per
// replay, after _initialize (or from a snapshot taken after it).
//
//go:wasmexport assay_check
func assayCheck() int32 {
	return stdio.call(registered)
}
