"""Assay's harness for Python checkers, run by python.wasm in the sandbox.

python.wasm is a reactor (reactor.c). Its _initialize loads this file and
calls init(), once per snapshot: the interpreter started and the modules
checkers commonly use imported. Each replay starts from that snapshot and
calls check(), which runs /checker/check.py against /in/artifact for an
artifact of the type named in /checker/type.

For a code artifact the artifact's source runs first, as a module named
artifact (so that an `if __name__ == "__main__":` block does not run), and the
checker runs after it in the same namespace; for every other type the
checker finds the artifact as the string `artifact`, and as `data` when it
parses as JSON (otherwise `data` is None). Every checker also finds
`artifact_bytes`, and `evidence` (a string) and `criteria` (parsed) or None
where the case has none. The namespace is new for every check.

check() returns the status: 0, a pass, only when control came back to it
after the checker's last statement; 1, a fail, when anything else ended the
check. An uncaught exception, a failed assert included, prints a bounded
traceback on stderr, ending with the exception's type and message: the Go
side reads that into the outcome's detail. SystemExit is an exception like
any other, with any code and whether the artifact or the checker raised it:
sys.exit(0) is a fail (completion is pass, an exception is fail). The
interpreter is never finalized: atexit handlers do not run.

What the artifact's source can do, it does in the same interpreter, before
the checker and in every call the checker makes into it: RATIONALE.md says
what a pass guarantees against that. In short:

- init() removes sys.settrace and sys.setprofile from the interpreter (see
  disarm()): a trace or profile function is the one way Python code can
  write a running frame's locals or make it jump (f_lineno), so no code can
  skip the checker's statements or change the harness's decision.
- check() binds everything it needs once the artifact has run to locals of
  its own frame before the artifact runs, and uses nothing else after: no
  global, no builtin looked up by name, no Python function whose outcome
  counts (a function's __code__ can be replaced). The status it returns is
  a constant chosen by control flow alone.
- The checker runs with the builtins as they were before the artifact ran,
  in a builtins module of its own.
"""

import sys

# The traceback is bounded to this many of the innermost frames, and the
# exception's message to this many characters.
MAX_FRAMES = 12
MAX_MESSAGE = 2000

# The first line the Go side looks for in stderr.
MARK = "Traceback (most recent call last):"

# The bytes a JSON text can start with.
JSON_STARTS = b'{["-0123456789tfn'

# Where check() finds the checker and its input: the sandbox's mounts. The
# benchmarks' host harness points them at a directory of the host.
CHECKER_DIR = "/checker"
IN_DIR = "/in"

CODE = "code"
TYPES = {CODE, "solution", "dataset", "embedding", "document", "data_feed"}

# The type with which check() only compiles the checker, and runs nothing:
# how an upload's syntax is checked (python.CheckSource). Not an artifact
# type: only CheckSource's runs have it.
COMPILE = "compile"

# check()'s statuses. Past the artifact, check() returns them as literals:
# a global can be rebound.
PASS = 0
FAIL = 1  # an exception, reported on stderr
BAD_TYPE = 2  # /checker/type names no type
NOT_COMPILED = 3  # COMPILE: the checker does not compile, said on stderr

# The functions of sys that install a trace or profile function: removed
# by init() (see disarm()).
HOOKS = ("settrace", "setprofile")

# The builtins as init() found them, as (name, value) pairs: a tuple, which
# nothing can change. The checker runs with these.
BUILTINS = None

# What init() imports: the modules checkers commonly use, and what the
# harness itself needs to parse JSON and to report an exception.
PRELOAD = (
    "builtins", "json", "re", "math", "collections", "dataclasses", "itertools",
    "functools", "decimal", "datetime", "fractions", "statistics", "random",
    "string", "typing", "enum", "copy", "operator", "heapq", "bisect",
    "csv", "io", "hashlib", "base64", "linecache", "traceback",
)


def init():
    """Import PRELOAD, disarm the interpreter's trace and profile hooks, keep
    the builtins, then freeze what start-up built out of the cyclic garbage
    collector's way, so that a check's collections do not walk it."""
    global BUILTINS
    import builtins
    import gc

    for name in PRELOAD:
        __import__(name)
    disarm(gc)
    BUILTINS = tuple(builtins.__dict__.items())
    gc.collect()
    gc.freeze()


def disarm(gc):
    """Remove sys.settrace and sys.setprofile from every container that holds
    them: sys's dict, and the copy of it that CPython keeps to initialise sys
    again (which _imp.create_builtin would restore them from). Nothing can
    install a trace or profile function written in Python after this; the
    C-level profiler of _lsprof remains, and its Python timer runs as a
    plain call that can neither write a frame's locals nor make it jump."""
    for name in HOOKS:
        hook = getattr(sys, name)
        for holder in gc.get_referrers(hook):
            if type(holder) is not dict:
                raise RuntimeError(f"harness: sys.{name} is held by a {type(holder).__name__}")
            keys = []
            for key, value in holder.items():
                if value is hook:
                    keys.append(key)
            for key in keys:
                del holder[key]
        if hasattr(sys, name) or gc.get_referrers(hook):
            raise RuntimeError(f"harness: sys.{name} is still reachable")


def read(path, optional=False):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        if optional:
            return None
        raise


def text(b):
    return b.decode("utf-8", "replace")


def report(exc, sources, note=None, err=None):
    """Print exc's traceback without the harness's own frames, quoting the
    lines of sources (file name to source bytes), then note, if any, on err
    (sys.stderr when None)."""
    import linecache
    import traceback

    if err is None:
        err = sys.stderr
    for name, src in sources.items():
        lines = text(src).splitlines(keepends=True)
        linecache.cache[name] = (len(src), None, lines, name)

    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    frames = traceback.extract_tb(tb)
    dropped = max(0, len(frames) - MAX_FRAMES)
    lines = [MARK + "\n"]
    if dropped:
        lines.append(f"  ... {dropped} outer frames left out ...\n")
    lines.extend(traceback.format_list(frames[dropped:]))
    summary = traceback.format_exception_only(type(exc), exc)
    msg = "".join(summary).rstrip("\n")
    if len(msg) > MAX_MESSAGE:
        msg = msg[:MAX_MESSAGE] + f"... [{len(msg) - MAX_MESSAGE} characters left out]"
    lines.append(msg + "\n")
    if note:
        lines.append(note + "\n")
    err.write("".join(lines))
    err.flush()


# The notes report() adds to the exception, by where it was raised.
ARTIFACT_NOTE = "(raised by the artifact's source, before the checker ran: a pass needs the checker to run to its end)"
EXIT_NOTE = "(SystemExit ends the check before the checker's end, whatever its code: a pass needs the checker to run to its end)"
HOOK_NOTE = "(a pass needs the checker to run to its end, and none runs under a trace or profile function)"


def prepare(kind):
    """Read the checker and its input and compile both, with nothing of
    either run: the checker's namespace, the checker's code, the artifact's
    code (None but for a code artifact) and the sources report() quotes.
    Compiling the artifact raises its SyntaxError."""
    import builtins

    raw = read(f"{IN_DIR}/artifact")
    evidence = read(f"{IN_DIR}/evidence", optional=True)
    criteria = read(f"{IN_DIR}/criteria.json", optional=True)
    # The namespace is a real module's, in sys.modules, so that pickle,
    # dataclasses and typing.get_type_hints find it.
    name = "artifact" if kind == CODE else "__main__"
    module = type(sys)(name)
    sys.modules[name] = module
    ns = module.__dict__
    ns.update({
        "__builtins__": builtins,
        "artifact": text(raw),
        "artifact_bytes": raw,
        "evidence": None if evidence is None else text(evidence),
        "criteria": None,
        "data": None,
    })
    if criteria is not None:
        import json

        try:
            ns["criteria"] = json.loads(criteria)
        except ValueError:
            pass
    # Only what may be JSON is parsed.
    head = raw.lstrip()[:1]
    if kind != CODE and head and head in JSON_STARTS:
        import json

        try:
            ns["data"] = json.loads(raw)
        except ValueError:
            pass
    sys.argv = ["check.py"]
    sources = {"check.py": read(f"{CHECKER_DIR}/check.py")}
    checker = compile(sources["check.py"], "check.py", "exec", dont_inherit=True, optimize=0)
    artifact = None
    if kind == CODE:
        sources["artifact.py"] = raw
        artifact = compile(raw, "artifact.py", "exec", dont_inherit=True, optimize=0)
    return ns, checker, artifact, sources


def syntax():
    """COMPILE: compile the checker, run nothing, and say on stderr why it
    does not compile."""
    try:
        compile(read(f"{CHECKER_DIR}/check.py"), "check.py", "exec", dont_inherit=True, optimize=0)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" if exc.lineno else "check.py"
        if exc.lineno and exc.offset:
            where += f", column {exc.offset}"
        sys.stderr.write(f"{type(exc).__name__} at {where}: {exc.msg}\n")
        return NOT_COMPILED
    except MemoryError as exc:
        # What CPython's parser raises, with no message, for nesting too
        # deep for its stack; or memory running out.
        sys.stderr.write(f"MemoryError: {str(exc) or 'nested too deeply for the parser, or too large'}\n")
        return NOT_COMPILED
    except (ValueError, RecursionError, OverflowError) as exc:
        sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
        return NOT_COMPILED
    return PASS


def check():
    """Run the checker against /in and flush its output: the status, as an
    int (see the module's doc)."""
    # Everything used once the artifact's source has run is bound here,
    # before it runs (the interpreter is as the snapshot left it): locals,
    # which nothing can rebind once tracing is disarmed. Past this block the
    # function names no global and no builtin: `except base` rather than
    # `except BaseException`, which is looked up when an exception comes.
    base, system_exit, isinstance_ = BaseException, SystemExit, isinstance
    exec_, module_type, hooked = exec, type(sys), RuntimeError
    gettrace, getprofile = sys.gettrace, sys.getprofile
    out_flush, err_flush, err = sys.stdout.flush, sys.stderr.flush, sys.stderr
    report_ = report
    artifact_note, exit_note, hook_note = ARTIFACT_NOTE, EXIT_NOTE, HOOK_NOTE
    import builtins

    real_builtins = builtins.__dict__
    pristine = BUILTINS
    if pristine is None:  # the host benchmark's harness, which skips init()
        pristine = tuple(real_builtins.items())

    kind = text(read(f"{CHECKER_DIR}/type")).strip()
    if kind == COMPILE:
        return syntax()
    if kind not in TYPES:
        sys.stderr.write(f"harness: artifact type {kind!r} is not one of {sorted(TYPES)}\n")
        return BAD_TYPE
    sources = {}
    note = None  # what report() adds to an exception raised now
    try:
        ns, checker, artifact, sources = prepare(kind)
        if artifact is not None:
            note = artifact_note
            exec_(artifact, ns)
        note = hook_note
        if gettrace() is not None or getprofile() is not None:
            raise hooked("the artifact's source left a trace or profile function set")
        note = None
        # The checker's own builtins module, filled with the builtins as
        # they were before the artifact ran. The artifact's functions keep
        # the builtins they were defined with.
        clean = module_type("builtins")
        clean.__dict__.update(pristine)
        ns["__builtins__"] = clean
        note = exit_note
        exec_(checker, ns)
    except base as exc:
        if note is exit_note and not isinstance_(exc, system_exit):
            note = None
        try:
            # The check is over: the report, which uses the builtins, gets
            # them as they were.
            real_builtins.clear()
            real_builtins.update(pristine)
            report_(exc, sources, note, err)
        except base:
            pass
        try:
            out_flush()
            err_flush()
        except base:
            pass
        return 1
    # The checker's last statement ran: only a failure to write its output
    # can make it a fail now.
    try:
        out_flush()
        err_flush()
    except base:
        return 1
    return 0
