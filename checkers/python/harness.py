"""Assay's harness for Python checkers, run by python.wasm in the sandbox.

    python -I -S -B /checker/harness.py TYPE

runs /checker/check.py against /in/artifact. For a code artifact the
artifact's source runs first, as a module named artifact (so that an
`if __name__ == "__main__":` block does not run), and the checker runs after
it in the same namespace; for every other type the checker finds the
artifact as the string `artifact`, and as `data` when it parses as JSON
(otherwise `data` is None). Every checker also finds `artifact_bytes`, and
`evidence` (a string) and `criteria` (parsed) or None where the case has none.

Exit status 0 is pass. An uncaught exception, a failed assert included,
prints a bounded traceback on stderr, ending with the exception's type and
message, and exits 1: the Go side reads that into the outcome's detail.
sys.exit(n) exits n, as in any Python program. The harness exits at once,
without the interpreter's finalization, whose only effect here would be to
spend fuel freeing what the checker built: atexit handlers do not run.
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

CODE = "code"
TYPES = {CODE, "solution", "dataset", "embedding", "document", "data_feed"}


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


# The sources run, by the file names their code was compiled with, so that
# a traceback can quote their lines.
sources = {}


def report(exc):
    """Print exc's traceback without the harness's own frames."""
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


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in TYPES:
        sys.stderr.write(f"harness: usage: harness.py TYPE (one of {sorted(TYPES)})\n")
        return 2
    kind = sys.argv[1]
    import builtins

    raw = read("/in/artifact")
    evidence = read("/in/evidence", optional=True)
    criteria = read("/in/criteria.json", optional=True)
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
    # Only what may be JSON is parsed, so that a checker of text does not
    # pay for importing json.
    head = raw.lstrip()[:1]
    if kind != CODE and head and head in JSON_STARTS:
        import json

        try:
            ns["data"] = json.loads(raw)
        except ValueError:
            pass
    sys.argv = ["check.py"]
    sources["check.py"] = read("/checker/check.py")
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
        report(exc)
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


if __name__ == "__main__":
    status = main()
    # Exit at once: the interpreter's finalization would only spend fuel
    # freeing what the checker built.
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        status = status or 1
    import os

    os._exit(status)
