// probe is the guest the SDK's tests build, as a reactor and as a command:
// the artifact names what the check does, so that one module shows every
// path of assay_check.
//
//	pass        nil
//	fail TEXT   an error with message TEXT
//	long N      an error of N bytes of "é"
//	empty       an error with an empty message
//	panic TEXT  a panic with TEXT
//	evidence    an error saying whether evidence is nil, and its bytes
//	count       an error with the number of calls so far in this instance
//	exit N      os.Exit(N)
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/assayhq/assay/checkers/guest"
)

var calls int

func init() { guest.Handle(check) }

func main() {}

func check(artifact, evidence []byte) error {
	calls++
	verb, arg, _ := strings.Cut(string(artifact), " ")
	switch verb {
	case "pass":
		return nil
	case "fail":
		return errors.New(arg)
	case "long":
		n, _ := strconv.Atoi(arg)
		return errors.New(strings.Repeat("é", n/2))
	case "empty":
		return errors.New("")
	case "panic":
		panic(arg)
	case "evidence":
		if evidence == nil {
			return errors.New("no evidence")
		}
		return fmt.Errorf("evidence %q", evidence)
	case "count":
		return fmt.Errorf("call %d", calls)
	case "exit":
		n, _ := strconv.Atoi(arg)
		os.Exit(n)
	}
	return fmt.Errorf("unknown verb %q", verb)
}
