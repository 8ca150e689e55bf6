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

check() returns the status: 0 is pass. An uncaught exception, a failed
assert included, prints a bounded traceback on stderr, ending with the
exception's type and message, and returns 1: the Go side reads that into the
outcome's detail. sys.exit(n) returns n, as the exit status of any Python
program. The interpreter is never finalized: atexit handlers do not run.
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

# What init() imports: the modules checkers commonly use, and what the
# harness itself needs to parse JSON and to report an exception.
PRELOAD = (
    "builtins", "json", "re", "math", "collections", "dataclasses", "itertools",
    "functools", "decimal", "datetime", "fractions", "statistics", "random",
    "string", "typing", "enum", "copy", "operator", "heapq", "bisect",
    "csv", "io", "hashlib", "base64", "linecache", "traceback",
)


def init():
    """Import PRELOAD, then freeze what start-up built out of the cyclic
    garbage collector's way, so that a check's collections do not walk it."""
    import gc

    for name in PRELOAD:
        __import__(name)
    gc.collect()
    gc.freeze()


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


def report(exc, sources):
    """Print exc's traceback without the harness's own frames, quoting the
    lines of sources (file name to source bytes)."""
    import linecache
    import traceback

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
    sys.stderr.write("".join(lines))
    sys.stderr.flush()


def run():
    kind = text(read(f"{CHECKER_DIR}/type")).strip()
    if kind not in TYPES:
        sys.stderr.write(f"harness: artifact type {kind!r} is not one of {sorted(TYPES)}\n")
        return 2
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
    if kind == CODE:
        sources["artifact.py"] = raw
    try:
        checker = compile(sources["check.py"], "check.py", "exec", dont_inherit=True)
        if kind == CODE:
            exec(compile(raw, "artifact.py", "exec", dont_inherit=True), ns)
        exec(checker, ns)
    except SystemExit as exc:
        return exit_status(exc.code)
    except BaseException as exc:
        report(exc, sources)
        return 1
    return 0


def exit_status(code):
    """The status sys.exit(code) would exit with."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    sys.stderr.write(f"{code}\n")
    return 1


def check():
    """Run the checker and flush its output: the status, as an int."""
    status = run()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        status = status or 1
    return status
