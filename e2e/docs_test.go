package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
)

// The documents whose shell examples TestDocs runs, from the repository's
// root: README.md and every guide in docs/.
func documents(tb testing.TB) []string {
	tb.Helper()
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		tb.Fatal(err)
	}
	out := []string{"README.md"}
	for _, d := range docs {
		out = append(out, filepath.Join("docs", filepath.Base(d)))
	}
	return out
}

const repoRoot = ".."

// readDocuments reads and parses every document, each with its text.
func readDocuments(tb testing.TB) []document {
	tb.Helper()
	var out []document
	for _, path := range documents(tb) {
		src, err := os.ReadFile(filepath.Join(repoRoot, path))
		if err != nil {
			tb.Fatal(err)
		}
		d, err := parseDocument(path, src)
		if err != nil {
			tb.Fatal(err)
		}
		d.src = src
		out = append(out, d)
	}
	return out
}

// A document's runnable examples, and how to run them.
//
// Every fenced block whose info string is exactly sh runs; any other
// (text, json, js, …) is only shown. In a document:
//
//	<!-- serve: --flag value … -->   flags for the document's `assay serve`
//	<!-- serve-env: NAME=value … --> its environment (the server's only:
//	                                 a block that needs a value sets it)
//	<!-- needs: node … -->           tools besides bash, curl and jq
//
// and right before a block:
//
//	<!-- skip: why -->     the sh block is shown, never run (it needs what a
//	                       test cannot have: a database, an LLM, itself)
//	<!-- before-serve -->  the sh block runs before the server starts (it
//	                       writes to the stopped server's data directory)
//	<!-- output -->        the text block is what the sh block before it
//	                       prints (outputMatches says how it is compared)
//
// A document's blocks run twice, as a reader who runs the document again
// would: each time in order in a new bash (set -e, pipefail), in one
// directory holding links to the repository's examples and fixtures, with
// the built assay first on PATH and one data directory, ./data, for the
// server of both runs, which listens on a free port (every
// http://localhost:8080 in a block is its address). Both runs must print
// the documented output, and every file they leave must be one the
// repository's .gitignore covers.
type document struct {
	path     string
	src      []byte   // the document's text
	serve    []string // flags after --addr and --data
	env      []string
	needs    []string
	blocks   []block
	shown    int // blocks only shown
	badFence []string
}

type block struct {
	line         int // of the opening fence
	text         string
	skip         string // why it is not run; "" runs it
	beforeServe  bool
	want         string // the documented output; "" when none is shown
	wantLine     int    // the line of the output block's fence
	directiveErr string
}

var (
	fenceRE     = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*([^\\s`]*)")
	directiveRE = regexp.MustCompile(`^<!--\s*([a-z-]+):?\s*(.*?)\s*-->\s*$`)
)

func parseDocument(path string, src []byte) (document, error) {
	d := document{path: path}
	lines := strings.Split(string(src), "\n")
	pending := "" // the directive on the line right before a fence
	pendingArg := ""
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := directiveRE.FindStringSubmatch(line); m != nil {
			switch m[1] {
			case "serve":
				d.serve = append(d.serve, strings.Fields(m[2])...)
			case "serve-env":
				d.env = append(d.env, strings.Fields(m[2])...)
			case "needs":
				d.needs = append(d.needs, strings.Fields(m[2])...)
			case "skip", "before-serve", "output":
				pending, pendingArg = m[1], m[2]
				continue
			}
		}
		m := fenceRE.FindStringSubmatch(line)
		if m == nil {
			if strings.TrimSpace(line) != "" {
				pending = ""
			}
			continue
		}
		fence, lang, start := m[2], m[3], i+1
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), fence); i++ {
			body = append(body, strings.TrimPrefix(lines[i], m[1]))
		}
		if i == len(lines) {
			return d, fmt.Errorf("%s:%d: the block never closes", path, start)
		}
		switch lang {
		case "sh":
			b := block{line: start, text: strings.Join(body, "\n") + "\n"}
			switch pending {
			case "skip":
				b.skip = pendingArg
				if b.skip == "" {
					b.directiveErr = "a skip says why"
				}
			case "before-serve":
				b.beforeServe = true
			}
			d.blocks = append(d.blocks, b)
			if pending == "output" {
				d.badFence = append(d.badFence, fmt.Sprintf("%s:%d: <!-- output --> before a sh block: the output is a text block after it", path, start))
			}
		case "bash", "shell", "console", "zsh":
			d.badFence = append(d.badFence, fmt.Sprintf("%s:%d: ```%s: write sh (run by the test) or text (shown only)", path, start, lang))
		case "text":
			if pending == "output" {
				switch n := len(d.blocks); {
				case n == 0 || d.blocks[n-1].skip != "" || d.blocks[n-1].want != "":
					d.badFence = append(d.badFence, fmt.Sprintf("%s:%d: <!-- output --> follows no sh block that runs and shows no output yet", path, start))
				default:
					d.blocks[n-1].want, d.blocks[n-1].wantLine = strings.Join(body, "\n"), start
				}
			} else if pending != "" {
				d.badFence = append(d.badFence, fmt.Sprintf("%s:%d: <!-- %s --> before a %q block, which never runs", path, start, pending, lang))
			}
			d.shown++
		default:
			if pending != "" {
				d.badFence = append(d.badFence, fmt.Sprintf("%s:%d: <!-- %s --> before a %q block, which never runs", path, start, pending, lang))
			}
			d.shown++
		}
		pending = ""
	}
	return d, nil
}

// TestDocs runs every sh example of README.md and docs/*.md against a real
// `assay serve`, as a reader would type them from the repository's root,
// twice on one data directory, and compares what they print with the
// documented output.
func TestDocs(t *testing.T) {
	t.Parallel()
	// assay check, replay and judge compile checkers into the run's
	// compile cache, which the servers share, not the user's: CPython is
	// compiled once per run
	cache := "ASSAY_CACHE=" + compileCache
	for _, d := range readDocuments(t) {
		path := d.path
		t.Run(strings.TrimSuffix(strings.ReplaceAll(path, "/", "_"), ".md"), func(t *testing.T) {
			// Each document has a directory, a server and a shell of its
			// own; the compile cache they share is safe for concurrent use.
			t.Parallel()
			for _, e := range d.badFence {
				t.Error(e)
			}
			for _, b := range d.blocks {
				if b.directiveErr != "" {
					t.Errorf("%s:%d: %s", path, b.line, b.directiveErr)
				}
			}
			if !testing.Short() && bytes.Contains(d.src, []byte(".py")) {
				// CPython compiled once, before the documents that
				// run Python checkers start at once
				warmCache(t, filepath.Join(repoRoot, "examples", "checkers", "rows.py"))
			}
			d.run(t, cache)
		})
	}
}

// run runs d's blocks twice in one directory, and checks that they left
// nothing git would see.
func (d document) run(t *testing.T, shellEnv ...string) {
	if testing.Short() {
		t.Skip("e2e: starts a server")
	}
	for _, tool := range append([]string{"bash", "curl", "jq"}, d.needs...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s needs %s, which is not installed", d.path, tool)
		}
	}
	dir := t.TempDir()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"examples", "fixtures"} {
		if err := os.Symlink(filepath.Join(root, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	tracked := gitStatus(t, root, "examples", "fixtures")
	for pass := 1; pass <= 2; pass++ {
		if !d.runOnce(t, dir, pass, shellEnv) {
			return
		}
	}
	if after := gitStatus(t, root, "examples", "fixtures"); after != tracked {
		t.Errorf("%s changed the repository's examples or fixtures:\n%s", d.path, after)
	}
	for _, f := range notIgnored(t, root, dir) {
		t.Errorf("%s leaves %s, which git would see in a clone: write it under a directory .gitignore covers", d.path, f)
	}
}

// runOnce is one reader's run of d in dir: a new shell, the server
// started on ./data before the first block that needs it and stopped at
// the end. It returns false when a block failed.
func (d document) runOnce(t *testing.T, dir string, pass int, shellEnv []string) bool {
	scripts := t.TempDir()
	sh := startShell(t, dir, scripts, shellEnv)
	var s *server
	serve := func() {
		s = startServe(t, filepath.Join(dir, "data"), d.serve, d.env, 60*time.Second)
		t.Logf("%s, run %d: assay serve %s on %s", d.path, pass, strings.Join(d.serve, " "), s.base)
	}
	defer func() {
		if s != nil {
			s.stop(t)
		}
	}()
	ran, compared := 0, 0
	for _, b := range d.blocks {
		if b.skip != "" {
			if pass == 1 {
				t.Logf("%s:%d: not run: %s", d.path, b.line, b.skip)
			}
			continue
		}
		if s == nil && !b.beforeServe {
			serve()
		}
		if s != nil && b.beforeServe {
			t.Fatalf("%s:%d: a before-serve block after the server started", d.path, b.line)
		}
		text := b.text
		if s != nil {
			text = strings.ReplaceAll(text, "http://localhost:8080", s.base)
		}
		began := time.Now()
		out, err := sh.run(text)
		took := time.Since(began).Round(time.Millisecond)
		if err != nil {
			msg := fmt.Sprintf("%s:%d, run %d: %v\n--- the block\n%s--- its output\n%s", d.path, b.line, pass, err, b.text, out)
			if s != nil {
				msg += fmt.Sprintf("--- the server's log (last 4 KiB)\n%s", tail(s.out.String(), 4096))
			}
			t.Error(msg)
			return false
		}
		if testing.Verbose() {
			t.Logf("%s:%d, run %d, %s:\n%s", d.path, b.line, pass, took, out)
		}
		if b.want != "" {
			if s != nil {
				out = strings.ReplaceAll(out, s.base, "http://localhost:8080")
			}
			if !outputMatches(b.want, out) {
				t.Errorf("%s:%d, run %d: the block printed\n%s\n--- where %s:%d documents\n%s", d.path, b.line, pass, out, d.path, b.wantLine, b.want)
			}
			compared++
		}
		ran++
	}
	if s == nil && (len(d.serve) > 0 || len(d.env) > 0) {
		serve() // the flags a document names must still serve when none of its blocks runs
	}
	t.Logf("%s, run %d: %d blocks run (%d outputs compared), %d skipped, %d shown only", d.path, pass, ran, compared, len(d.blocks)-ran, d.shown)
	return true
}

// outputMatches reports whether got is the documented output want. Lines
// compare without their trailing blanks. In want, "…" stands for what
// changes from run to run: within a line, any text (ids, hashes, times);
// as a whole line, any number of lines.
func outputMatches(want, got string) bool {
	var re strings.Builder
	re.WriteString(`\A`)
	for _, line := range strings.Split(strings.TrimRight(want, "\n"), "\n") {
		line = strings.TrimRight(line, " \t")
		if line == "…" {
			re.WriteString(`(?:[^\n]*\n)*?`)
			continue
		}
		parts := strings.Split(line, "…")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re.WriteString(strings.Join(parts, `[^\n]*?`) + `\n`)
	}
	re.WriteString(`\z`)
	var norm strings.Builder
	for _, line := range strings.Split(strings.TrimRight(got, "\n"), "\n") {
		norm.WriteString(strings.TrimRight(line, " \t") + "\n")
	}
	return regexp.MustCompile(re.String()).MatchString(norm.String())
}

// gitStatus is git's short status of paths in the repository at root, or
// "" when git cannot say (no git, not a checkout).
func gitStatus(tb testing.TB, root string, paths ...string) string {
	tb.Helper()
	out, err := exec.Command("git", append([]string{"-C", root, "status", "--porcelain", "--untracked-files=all", "--"}, paths...)...).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// notIgnored returns the files under dir (the links to the repository's
// examples and fixtures aside) that the .gitignore of the repository at
// root would not cover, were they in its root: what a reader who ran the
// documents in a clone would find in git status.
func notIgnored(tb testing.TB, root, dir string) []string {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		tb.Logf("git is not installed: not checking that .gitignore covers what the documents write")
		return nil
	}
	var files []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "examples" || rel == "fixtures" {
			return fs.SkipDir
		}
		if !e.IsDir() {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if len(files) == 0 {
		return nil
	}
	cmd := exec.Command("git", "-C", root, "check-ignore", "--no-index", "--verbose", "--non-matching", "--stdin")
	cmd.Stdin = strings.NewReader(strings.Join(files, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil && len(out) == 0 {
		tb.Fatalf("git check-ignore: %v", err)
	}
	var seen []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// "::\tpath" is a path that no pattern matches
		if p, ok := strings.CutPrefix(line, "::\t"); ok {
			seen = append(seen, p)
		}
	}
	return seen
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// shell is one bash running a document's blocks in turn, so that variables
// and files carry from one block to the next.
type shell struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	lines   chan string
	scripts string // where the blocks are written to be sourced
	n       int
	done    chan error
}

const doneMark = "\x1eassay-docs-block-done"

// startShell starts bash in dir, with env added to its environment; the
// blocks it runs are written to files in scripts.
func startShell(tb testing.TB, dir, scripts string, env []string) *shell {
	tb.Helper()
	bin := filepath.Dir(binary)
	cmd := exec.Command("bash", "--noprofile", "--norc", "-e", "-o", "pipefail")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	pw.Close()
	sh := &shell{cmd: cmd, in: in, lines: make(chan string, 1024), scripts: scripts, done: make(chan error, 1)}
	go func() {
		r := bufio.NewReader(pr)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				sh.lines <- line
			}
			if err != nil {
				close(sh.lines)
				return
			}
		}
	}()
	go func() { sh.done <- cmd.Wait() }()
	// $(…) fails with its command, as the last command of a pipeline does
	fmt.Fprintln(in, "shopt -s inherit_errexit")
	tb.Cleanup(func() {
		in.Close()
		select {
		case <-sh.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-sh.done
		}
	})
	return sh
}

// run sources text in the shell, with stdin from /dev/null so that no
// command reads the shell's own input, and returns what it printed. A
// command that fails ends the shell: that block's error.
func (sh *shell) run(text string) (string, error) {
	sh.n++
	name := filepath.Join(sh.scripts, fmt.Sprintf("block-%02d.sh", sh.n))
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		return "", err
	}
	if _, err := fmt.Fprintf(sh.in, "source %q </dev/null\nprintf '\\n%s\\n'\n", name, doneMark); err != nil {
		return "", fmt.Errorf("the shell is gone: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	for {
		select {
		case line, ok := <-sh.lines:
			if !ok {
				err := <-sh.done
				sh.done <- err
				return out.String(), fmt.Errorf("a command failed (bash: %v)", err)
			}
			if strings.TrimSuffix(line, "\n") == doneMark {
				return strings.TrimSuffix(out.String(), "\n"), nil
			}
			out.WriteString(line)
		case <-ctx.Done():
			_ = syscall.Kill(-sh.cmd.Process.Pid, syscall.SIGKILL)
			return out.String(), fmt.Errorf("the block ran for more than 3 minutes")
		}
	}
}

// TestDocs_examplesUsed: every file under examples/ is used by a run
// example, and no document sends a reader outside the repository or spells
// the binary otherwise than assay.
func TestDocs_examplesUsed(t *testing.T) {
	var run, all strings.Builder
	for _, d := range readDocuments(t) {
		path, src := d.path, d.src
		all.Write(src)
		for _, b := range d.blocks {
			if b.skip == "" {
				run.WriteString(b.text)
			}
		}
		for _, bad := range []string{"../shared", "DESIGN.md", "bin/assay ", "bin/assay\n"} {
			if i := bytes.Index(src, []byte(bad)); i >= 0 {
				t.Errorf("%s:%d: %q points outside the repository or spells the binary otherwise than assay",
					path, 1+bytes.Count(src[:i], []byte("\n")), strings.TrimSpace(bad))
			}
		}
		for _, link := range localLinks(src) {
			if _, err := os.Stat(filepath.Join(repoRoot, filepath.Dir(path), link)); err != nil {
				t.Errorf("%s: a link to %s, which is not in the repository", path, link)
			}
		}
	}
	var unused []string
	err := filepath.WalkDir(filepath.Join(repoRoot, "examples"), func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, p)
		rel = filepath.ToSlash(rel)
		want := rel
		if src, ok := strings.CutSuffix(rel, ".c"); ok {
			want = src + ".wasm" // a checker's source, used with the module built from it
		}
		if !strings.Contains(run.String(), want) {
			unused = append(unused, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(unused)
	if len(unused) > 0 {
		t.Errorf("no run example uses %s", strings.Join(unused, ", "))
	}
}

var linkRE = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)

// localLinks are a markdown document's links that are not URLs.
func localLinks(src []byte) []string {
	var out []string
	for _, m := range linkRE.FindAllSubmatch(src, -1) {
		l := string(m[1])
		if !strings.Contains(l, "://") && !strings.HasPrefix(l, "mailto:") {
			out = append(out, l)
		}
	}
	return out
}

// TestDocs_parse: the runner's reading of a document.
func TestDocs_parse(t *testing.T) {
	src := "<!-- serve: --matters-auth open -->\n<!-- needs: node -->\n" +
		"```sh\necho one\n```\n\n<!-- skip: needs an LLM -->\n```sh\nllama\n```\n" +
		"<!-- before-serve -->\n```sh\nassay principals add\n```\n```text\nshown\n```\n```bash\nx\n```\n"
	d, err := parseDocument("x.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.serve, []string{"--matters-auth", "open"}) || !slices.Equal(d.needs, []string{"node"}) {
		t.Fatalf("serve %q needs %q", d.serve, d.needs)
	}
	if len(d.blocks) != 3 || d.blocks[0].text != "echo one\n" || d.blocks[0].skip != "" ||
		d.blocks[1].skip != "needs an LLM" || !d.blocks[2].beforeServe || d.blocks[2].skip != "" {
		t.Fatalf("blocks %+v", d.blocks)
	}
	if d.shown != 1 || len(d.badFence) != 1 {
		t.Fatalf("shown %d, bad fences %q", d.shown, d.badFence)
	}
	if _, err := parseDocument("y.md", []byte("```sh\nnever closed\n")); err == nil {
		t.Fatal("an unclosed block parsed")
	}
	out := "```sh\necho one\n```\n\n<!-- output -->\n```text\none\n```\n" +
		"<!-- output -->\n```text\nno block\n```\n<!-- skip: why -->\n```sh\nx\n```\n<!-- output -->\n```text\nskipped\n```\n"
	d, err = parseDocument("z.md", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.blocks) != 2 || d.blocks[0].want != "one" || d.blocks[0].wantLine != 6 || d.blocks[1].want != "" || len(d.badFence) != 2 {
		t.Fatalf("blocks %+v, bad fences %q", d.blocks, d.badFence)
	}
}

// TestDocs_outputMatches: a documented output and what a block printed.
func TestDocs_outputMatches(t *testing.T) {
	for _, tc := range []struct {
		name, want, got string
		ok              bool
	}{
		{"OK", "a\nb", "a\nb\n", true},
		{"OKTrailingBlanks", "a  \nb", "a\nb  ", true},
		{"OKWithinLine", `{"id":"…","n":1}`, `{"id":"lst_01J","n":1}`, true},
		{"OKEmptyElision", "x…y", "xy", true},
		{"OKLines", "first\n…\nlast", "first\n2\n3\nlast", true},
		{"OKNoLines", "first\n…\nlast", "first\nlast", true},
		{"ErrOther", "a\nb", "a\nc", false},
		{"ErrMore", "a", "a\nb", false},
		{"ErrLess", "a\nb", "a", false},
		{"ErrAcrossLines", "a…b", "a\nb", false},
		{"ErrRegexpIsText", "a.c", "abc", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := outputMatches(tc.want, tc.got); got != tc.ok {
				t.Errorf("outputMatches(%q, %q) = %v", tc.want, tc.got, got)
			}
		})
	}
}

// TestDocs_serveAsDocumented: a document whose server needs flags or
// environment says how to start it with make run, spelled as the test
// starts it, and make run passes the flags on as the document says.
func TestDocs_serveAsDocumented(t *testing.T) {
	for _, d := range readDocuments(t) {
		path, src := d.path, d.src
		if len(d.serve) == 0 && len(d.env) == 0 {
			continue
		}
		want := "make run"
		if len(d.env) > 0 {
			want = strings.Join(d.env, " ") + " " + want
		}
		if len(d.serve) > 0 {
			want += " ARGS='" + strings.Join(d.serve, " ") + "'"
		}
		if !bytes.Contains(src, []byte(want)) {
			t.Errorf("%s starts its server with %s but never says `%s`", path, strings.Join(append(d.env, d.serve...), " "), want)
		}
		if _, err := exec.LookPath("make"); err != nil {
			continue
		}
		cmd := exec.Command("make", "-s", "-n", "run", "ARGS="+strings.Join(d.serve, " "))
		cmd.Dir = repoRoot
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("make -n run: %v", err)
		}
		if serve := "serve --addr :8080 --data ./data " + strings.Join(d.serve, " "); !strings.Contains(string(out), serve) {
			t.Errorf("make run ARGS='%s' runs\n%s\nnot %s", strings.Join(d.serve, " "), out, serve)
		}
	}
}

// The headline figures of README.md are links to the tables of
// docs/performance.md they come from.
var (
	figureRE = regexp.MustCompile(`\d[\d,.]*\s?(µs|ms|ns|s|x|%|MiB|GiB|MB|GB)\b|\d[\d,.]*\s?(cases|replays)/s`)
	perfLink = regexp.MustCompile(`\[([^\]]*)\]\(docs/performance\.md#([a-z0-9-]+)\)`)
)

// TestDocs_readme: README.md is a landing page of at most 300 lines, and
// every figure it shows links to the table of docs/performance.md it comes
// from.
func TestDocs_readme(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(src, []byte("\n")); n > 300 {
		t.Errorf("README.md has %d lines: a landing page has at most 300; move the rest to docs/", n)
	}
	perf, err := os.ReadFile(filepath.Join(repoRoot, "docs", "performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(perf), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			anchors[slug(strings.TrimLeft(h, "#"))] = true
		}
	}
	links, inBlock := 0, false
	for i, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock // what a command prints is no headline figure
			continue
		}
		if inBlock {
			continue
		}
		for _, m := range perfLink.FindAllStringSubmatch(line, -1) {
			links++
			if !anchors[m[2]] {
				t.Errorf("README.md:%d: a link to docs/performance.md#%s, which has no such heading", i+1, m[2])
			}
		}
		// What is left outside the links to performance.md must hold no
		// figure.
		rest := perfLink.ReplaceAllString(line, "")
		rest = regexp.MustCompile("`[^`]*`").ReplaceAllString(rest, "") // commands and flags are no figures
		if f := figureRE.FindString(rest); f != "" {
			t.Errorf("README.md:%d: %q is a figure that links to no table of docs/performance.md", i+1, f)
		}
	}
	if links == 0 {
		t.Error("README.md shows no headline figure from docs/performance.md")
	}
}

// slug is the anchor GitHub gives a heading: lowercase, spaces to
// hyphens, punctuation dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ' || r == '-':
			b.WriteRune('-')
		case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocs_shell: variables carry from block to block, output is a block's
// own, and a failing command, even inside $(…) or a pipeline, fails its
// block.
func TestDocs_shell(t *testing.T) {
	sh := startShell(t, t.TempDir(), t.TempDir(), nil)
	for _, tc := range []struct{ text, out string }{
		{"X=$(echo one)\n", ""},
		{"echo $X; echo two >&2\n", "one\ntwo\n"},
		{"cat; echo read nothing\n", "read nothing\n"}, // stdin is /dev/null
	} {
		if out, err := sh.run(tc.text); err != nil || out != tc.out {
			t.Fatalf("%q: %q, %v; want %q", tc.text, out, err, tc.out)
		}
	}
	for _, text := range []string{"false\necho after\n", "Y=$(false; echo y)\n", "false | true\n"} {
		sh := startShell(t, t.TempDir(), t.TempDir(), nil)
		if out, err := sh.run(text); err == nil || strings.Contains(out, "after") {
			t.Errorf("%q did not fail: %q", text, out)
		}
	}
}
