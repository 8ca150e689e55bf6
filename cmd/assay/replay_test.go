package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/assayhq/assay/wasm"
)

// replayJSON is what assay replay --json prints.
type replayJSON struct {
	Count       int            `json:"count"`
	MedianNS    int64          `json:"median_ns"`
	P99NS       int64          `json:"p99_ns"`
	ReplaysPerS float64        `json:"replays_per_s"`
	Parallel    int            `json:"parallel"`
	Memo        bool           `json:"memo"`
	MemoHits    int            `json:"memo_hits"`
	Mismatches  int            `json:"mismatches"`
	Outcome     map[string]any `json:"outcome"`
}

func TestReplay_json(t *testing.T) {
	cache := t.TempDir()
	art := writeFile(t, "artifact.json", `{"min_rows":1,"rows":[{"id":"a"}]}`)
	for _, tc := range []struct {
		name    string
		checker string
		extra   []string
		code    int
		kind    string
		hits    int
	}{
		{"OK", "pass.wasm", []string{"--count", "50"}, exitOK, "pass", 50},
		{"OKNoMemo", "pass.wasm", []string{"--count", "50", "--no-memo", "--parallel", "1"}, exitOK, "pass", 0},
		{"fail", "fail.wasm", []string{"--count", "20", "--no-memo"}, exitNo, "fail", 0},
		{"failMemo", "fail.wasm", []string{"--count", "20"}, exitNo, "fail", 20},
		{"fuel", "loop.wasm", []string{"--count", "3", "--fuel", "1000"}, exitNo, "fuel_exhausted", 3},
		{"invalid", "badimport.wasm", []string{"--count", "2"}, exitInvalidChecker, "invalid_checker", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"replay", "--cache", cache, "--json", "--checker", fixturePath(tc.checker), "--artifact", art}, tc.extra...)
			code, stdout, stderr := runAssay(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tc.code, stderr)
			}
			if stderr != "" {
				t.Errorf("stderr is not a terminal, yet: %q", stderr)
			}
			var got replayJSON
			var all map[string]any
			if err := json.Unmarshal([]byte(stdout), &all); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
			}
			json.Unmarshal([]byte(stdout), &got)
			for _, f := range []string{"count", "median_ns", "p99_ns", "replays_per_s", "parallel", "memo", "outcome"} {
				if _, ok := all[f]; !ok {
					t.Errorf("field %s missing", f)
				}
			}
			want := map[string]bool{"OK": true, "OKNoMemo": false, "fail": false, "failMemo": true, "fuel": true, "invalid": true}[tc.name]
			if got.Count < 1 || got.Outcome["kind"] != tc.kind || got.MemoHits != tc.hits || got.Memo != want || got.Mismatches != 0 {
				t.Errorf("count %d kind %v hits %d memo %v mismatches %d; want kind %s hits %d memo %v",
					got.Count, got.Outcome["kind"], got.MemoHits, got.Memo, got.Mismatches, tc.kind, tc.hits, want)
			}
			if got.MedianNS <= 0 || got.P99NS < got.MedianNS || got.ReplaysPerS <= 0 || got.Parallel < 1 {
				t.Errorf("figures: median %d p99 %d replays/s %f parallel %d", got.MedianNS, got.P99NS, got.ReplaysPerS, got.Parallel)
			}
			// The outcome is the object assay check --json prints, field
			// for field, apart from wall_ns.
			_, checkOut, _ := runAssay(t, append([]string{"check", "--cache", cache, "--json", "--checker", fixturePath(tc.checker), "--artifact", art},
				fuelArg(tc.extra)...)...)
			outJSON, _ := json.Marshal(got.Outcome)
			var checkMap map[string]any
			json.Unmarshal([]byte(checkOut), &checkMap)
			checkJSON, _ := json.Marshal(checkMap)
			wall := regexp.MustCompile(`"wall_ns":\d+`)
			if a, b := wall.ReplaceAll(outJSON, nil), wall.ReplaceAll(checkJSON, nil); string(a) != string(b) {
				t.Errorf("replay's outcome differs from check's:\n%s\n%s", a, b)
			}
		})
	}
}

// fuelArg returns the --fuel flag and value in args, if any.
func fuelArg(args []string) []string {
	for i, a := range args {
		if a == "--fuel" && i+1 < len(args) {
			return args[i : i+2]
		}
	}
	return nil
}

func TestReplay_parallel(t *testing.T) {
	art := writeFile(t, "artifact.txt", "100 25")
	code, stdout, stderr := runAssay(t, "replay", "--cache", "", "--json", "--no-memo", "--count", "40", "--parallel", "3",
		"--checker", fixturePath("primes.wasm"), "--artifact", art)
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	var got replayJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.Count != 40 || got.Parallel < 1 || got.Parallel > 3 || got.MemoHits != 0 {
		t.Errorf("%+v", got)
	}
	if got.Outcome["kind"] != string(wasm.KindPass) || got.Outcome["stdout"] != "primes up to 100: 25\n" {
		t.Errorf("outcome %v", got.Outcome)
	}
}

func TestReplay_human(t *testing.T) {
	art := writeFile(t, "artifact.txt", "10 3")
	code, stdout, _ := runAssay(t, "replay", "--cache", "", "--count", "5", "--checker", fixturePath("primes.wasm"), "--artifact", art)
	if code != exitNo {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{"5 replays of primes.wasm (wasm, compiler) on", "memo on (5 hits)", "median ", "replays/s", "fail: exited 1", "want 3 primes, counted 4"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
}

func TestReplay_usage(t *testing.T) {
	art := writeFile(t, "artifact.txt", "x")
	pass := fixturePath("pass.wasm")
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"ErrNoChecker", []string{"--artifact", art}, "--checker and --artifact are required"},
		{"ErrMissingChecker", []string{"--checker", "/no/such.wasm", "--artifact", art}, "cannot read checker /no/such.wasm"},
		{"ErrMissingArtifact", []string{"--checker", pass, "--artifact", "/no/such"}, "cannot read artifact /no/such"},
		{"ErrMissingEvidence", []string{"--checker", pass, "--artifact", art, "--evidence", "/no/ev"}, "cannot read evidence /no/ev"},
		{"ErrCount", []string{"--checker", pass, "--artifact", art, "--count", "0"}, "--count must be between 1"},
		{"ErrParallel", []string{"--checker", pass, "--artifact", art, "--parallel", "0"}, "--parallel must be at least 1"},
		{"ErrFuel", []string{"--checker", pass, "--artifact", art, "--fuel", "0"}, "--fuel must be between 1"},
		{"ErrMemory", []string{"--checker", pass, "--artifact", art, "--memory", "0"}, "--memory must be between 1"},
		{"ErrKind", []string{"--checker", pass, "--artifact", art, "--kind", "lua"}, "--kind must be wasm or python"},
		{"ErrType", []string{"--checker", pass, "--artifact", art, "--type", "code"}, "--type applies to python checkers only"},
		{"ErrArg", []string{"--checker", pass, "--artifact", art, "extra"}, `unexpected argument "extra"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runAssay(t, append([]string{"replay"}, tc.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tc.msg) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.msg)
			}
		})
	}
	if code, _, stderr := runAssay(t, "replay", "-h"); code != exitOK || !strings.Contains(stderr, "is not counted") {
		t.Errorf("-h: exit %d, %q", code, stderr)
	}
}

// TestReplay_python: a Python checker replays through the interpreter, its
// artifact type given by --type.
func TestReplay_python(t *testing.T) {
	if testing.Short() {
		t.Skip("runs CPython")
	}
	check := writeFile(t, "check.py", "assert add(2, 3) == 5\n")
	art := writeFile(t, "artifact.py", "def add(a, b):\n    return a + b\n")
	code, stdout, stderr := runAssay(t, "replay", "--json", "--count", "3", "--no-memo", "--type", "code", "--checker", check, "--artifact", art)
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	var got replayJSON
	json.Unmarshal([]byte(stdout), &got)
	if got.Count != 3 || got.Outcome["kind"] != "pass" || got.Mismatches != 0 {
		t.Errorf("%s", stdout)
	}
}

// interruptAt is a progress bar that cancels its run, as Ctrl-C does,
// once at replays are done.
type interruptAt struct {
	*progressBar
	at     int
	cancel context.CancelFunc
}

func (p interruptAt) set(done, total int) {
	p.progressBar.set(done, total)
	if done == p.at {
		p.cancel()
	}
}

// TestReplay_interrupt: replays stopped early print the summary of those
// done, clear the progress bar, and exit 130, in text and in JSON.
func TestReplay_interrupt(t *testing.T) {
	cache := t.TempDir()
	art := writeFile(t, "artifact.json", `{"rows":[1]}`)
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprint("json=", asJSON), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stdout, stderr bytes.Buffer
			bar := interruptAt{progressBar: &progressBar{w: &stderr}, at: 40, cancel: cancel}
			args := []string{"--cache", cache, "--checker", fixturePath("pass.wasm"), "--artifact", art,
				"--count", "1000000", "--no-memo", "--parallel", "2"}
			if asJSON {
				args = append(args, "--json")
			}
			if code := replay(ctx, args, &stdout, &stderr, bar); code != exitInterrupted {
				t.Fatalf("exit %d, want %d: %s %s", code, exitInterrupted, stdout.String(), stderr.String())
			}
			// The bar was drawn, then erased: blanks over its width, back
			// to the line's start.
			if !regexp.MustCompile(`replays.*\r +\r$`).MatchString(stderr.String()) {
				t.Errorf("stderr does not end with the bar erased: %q", stderr.String())
			}
			if !asJSON {
				if !regexp.MustCompile(`^interrupted: \d+ of 1000000 replays of pass.wasm .*\nmedian .* per replay; `).MatchString(stdout.String()) {
					t.Errorf("printed %q", stdout.String())
				}
				return
			}
			var got struct {
				replayJSON
				Interrupted bool `json:"interrupted"`
				Requested   int  `json:"requested"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
				t.Fatalf("%v: %s", err, stdout.String())
			}
			if !got.Interrupted || got.Requested != 1000000 || got.Count < 40 || got.Count >= 1000000 || got.MedianNS <= 0 ||
				got.Outcome["kind"] != "pass" || got.Mismatches != 0 {
				t.Errorf("printed %s", stdout.String())
			}
		})
	}
}
