package guest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fixtures that make one check in both forms: goreactor with this
// package, gocommand as a plain command. make fixtures builds them.
var (
	reactorFixture = filepath.Join("..", "..", "fixtures", "checkers", "goreactor.wasm")
	commandFixture = filepath.Join("..", "..", "fixtures", "checkers", "gocommand.wasm")
)

func readFixture(tb testing.TB, path string) []byte {
	tb.Helper()
	bin, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

// rows returns an artifact of the fixtures' kind: n rows with ids r0, r1...
// and extra fields after "rows" (such as `"min_rows": 3`).
func rows(n int, extra string) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf(`{"id": "r%d", "score": %d}`, i, i*7%100)
	}
	s := `{"rows": [` + strings.Join(ids, ", ") + `]`
	if extra != "" {
		s += ", " + extra
	}
	return s + "}"
}

// benchArtifact is the artifact the benchmarks replay: 100 rows, a pass.
var benchArtifact = rows(100, "")

// fixtureCases are inputs of the fixtures' check and what both forms must
// answer: exit status (or assay_check's status), stdout and stderr.
var fixtureCases = []struct {
	name     string
	artifact string
	evidence []byte
	status   int
	stdout   string
	stderr   string
}{
	{"OK", benchArtifact, nil, 0, "ok: 100 rows\n", ""},
	{"OKMinRows", rows(3, `"min_rows": 3`), nil, 0, "ok: 3 rows\n", ""},
	{"OKEvidence", rows(3, `"min_rows": 3`), []byte(`{"ids": ["r2", "r0"]}`), 0, "ok: 3 rows\n", ""},
	{"ErrFewRows", rows(99, ""), nil, 1, "", "99 rows, want at least 100\n"},
	{"ErrNoID", `{"min_rows": 2, "rows": [{"id": "a"}, {"score": 1}]}`, nil, 1, "", "row 1 has no id\n"},
	{"ErrSameID", `{"min_rows": 2, "rows": [{"id": "a"}, {"id": "b"}, {"id": "a"}]}`, nil, 1, "", "rows 0 and 2 have the same id \"a\"\n"},
	{"ErrNotJSON", `{"rows": [`, nil, 1, "", "artifact is not JSON: unexpected end of JSON input\n"},
	{"ErrEmpty", "", nil, 1, "", "artifact is not JSON: unexpected end of JSON input\n"},
	{"ErrEvidenceMissing", rows(3, `"min_rows": 3`), []byte(`{"ids": ["r1", "r9"]}`), 1, "", "row \"r9\" named by the evidence is missing\n"},
	{"ErrEvidenceNotJSON", rows(3, `"min_rows": 3`), []byte(`ids`), 1, "", "evidence is not JSON: invalid character 'i' looking for beginning of value\n"},
}

// TestFixtures runs goreactor (initialised with no input, then called) and
// gocommand on plain wazero: both forms give each case's status and output.
func TestFixtures(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t)
	reactor := compile(t, rt, readFixture(t, reactorFixture))
	command := compile(t, rt, readFixture(t, commandFixture))
	for _, tc := range fixtureCases {
		t.Run(tc.name, func(t *testing.T) {
			in := startReactor(t, rt, reactor)
			status, stdout, stderr := in.call(t, tc.artifact, tc.evidence, false)
			if int(status) != tc.status || stdout != tc.stdout || stderr != tc.stderr {
				t.Errorf("reactor: %d %q %q; want %d %q %q", status, stdout, stderr, tc.status, tc.stdout, tc.stderr)
			}
			code, stdout, stderr := runCommand(t, rt, command, tc.artifact, tc.evidence)
			if code != tc.status || stdout != tc.stdout || stderr != tc.stderr {
				t.Errorf("command: %d %q %q; want %d %q %q", code, stdout, stderr, tc.status, tc.stdout, tc.stderr)
			}
		})
	}
}
