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

// A document's runnable examples, and how to run them.
//
// Every fenced block whose info string is exactly sh runs; any other
// (text, json, js, …) is only shown. In a document:
//
//	<!-- serve: --flag value … -->   flags for the document's `assay serve`
//	<!-- serve-env: NAME=value … --> its environment, given to the shell too
//	<!-- needs: node … -->           tools besides bash, curl and jq
//
// and right before a sh block:
//
//	<!-- skip: why -->     the block is shown, never run (it needs what a
//	                       test cannot have: a database, an LLM, itself)
//	<!-- before-serve -->  the block runs before the server starts (it
//	                       writes to the stopped server's data directory)
//
// The blocks of one document run in order in one bash (set -e, pipefail),
// in a directory of its own holding links to the repository's examples and
// fixtures, with the built assay first on PATH. The server listens on a
// free port and keeps its data in ./data; every http://localhost:8080 in a
// block is that server's address.
type document struct {
	path     string
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
			case "skip", "before-serve":
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
		case "bash", "shell", "console", "zsh":
			d.badFence = append(d.badFence, fmt.Sprintf("%s:%d: ```%s: write sh (run by the test) or text (shown only)", path, start, lang))
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
// `assay serve`, as a reader would type them from the repository's root.
func TestDocs(t *testing.T) {
	// assay check, replay and judge compile checkers into one cache of the
	// test's own, not the user's
	cache := "ASSAY_CACHE=" + t.TempDir()
	for _, path := range documents(t) {
		src, err := os.ReadFile(filepath.Join(repoRoot, path))
		if err != nil {
			t.Fatal(err)
		}
		d, err := parseDocument(path, src)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(strings.TrimSuffix(strings.ReplaceAll(path, "/", "_"), ".md"), func(t *testing.T) {
			for _, e := range d.badFence {
				t.Error(e)
			}
			for _, b := range d.blocks {
				if b.directiveErr != "" {
					t.Errorf("%s:%d: %s", path, b.line, b.directiveErr)
				}
			}
			d.run(t, cache)
		})
	}
}

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
	sh := startShell(t, dir, append(shellEnv, d.env...))
	var s *server
	serve := func() {
		s = startServe(t, filepath.Join(dir, "data"), d.serve, d.env, 60*time.Second)
		t.Logf("%s: assay serve %s on %s", d.path, strings.Join(d.serve, " "), s.base)
	}
	ran := 0
	for _, b := range d.blocks {
		if b.skip != "" {
			t.Logf("%s:%d: not run: %s", d.path, b.line, b.skip)
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
		out, err := sh.run(text)
		if err != nil {
			msg := fmt.Sprintf("%s:%d: %v\n--- the block\n%s--- its output\n%s", d.path, b.line, err, b.text, out)
			if s != nil {
				msg += fmt.Sprintf("--- the server's log (last 4 KiB)\n%s", tail(s.out.String(), 4096))
			}
			t.Fatal(msg)
		}
		if testing.Verbose() {
			t.Logf("%s:%d:\n%s", d.path, b.line, out)
		}
		ran++
	}
	if s == nil && (len(d.serve) > 0 || len(d.env) > 0) {
		serve() // the flags a document names must still serve when none of its blocks runs
	}
	t.Logf("%s: %d blocks run, %d skipped, %d shown only", d.path, ran, len(d.blocks)-ran, d.shown)
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
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	dir   string
	n     int
	done  chan error
}

const doneMark = "\x1eassay-docs-block-done"

func startShell(tb testing.TB, dir string, env []string) *shell {
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
	sh := &shell{cmd: cmd, in: in, lines: make(chan string, 1024), dir: dir, done: make(chan error, 1)}
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
	name := filepath.Join(sh.dir, fmt.Sprintf(".block-%02d.sh", sh.n))
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
	for _, path := range documents(t) {
		src, err := os.ReadFile(filepath.Join(repoRoot, path))
		if err != nil {
			t.Fatal(err)
		}
		all.Write(src)
		d, err := parseDocument(path, src)
		if err != nil {
			t.Fatal(err)
		}
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
}

// TestDocs_shell: variables carry from block to block, output is a block's
// own, and a failing command, even inside $(…) or a pipeline, fails its
// block.
func TestDocs_shell(t *testing.T) {
	sh := startShell(t, t.TempDir(), nil)
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
		sh := startShell(t, t.TempDir(), nil)
		if out, err := sh.run(text); err == nil || strings.Contains(out, "after") {
			t.Errorf("%q did not fail: %q", text, out)
		}
	}
}
