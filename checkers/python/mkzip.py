"""mkzip.py LIBDIR SYSCONFIGDATA OUT writes the standard library zip that
python.wasm imports from.

Every kept module is compiled by the Python running this script, which must
be the 3.11.2 that built python.wasm, to unchecked hash-based bytecode
(PEP 552) with no source beside it. Entries are stored uncompressed (the
interpreter reads them without inflating, which would cost fuel), sorted, and
dated 1980-01-01, so that the same inputs give the same zip bytes.
"""

import importlib._bootstrap_external as bootstrap
import importlib.util
import os
import sys
import zipfile

PREFIX = "/usr/local/lib/python311.zip"

# Packages and modules a checker cannot use in the sandbox (no threads,
# processes, terminals, GUIs, dynamic loading, databases) or never needs (the
# regression tests, developer tools, installers).
DROP = {
    "__phello__", "test", "idlelib", "tkinter", "turtledemo", "turtle.py",
    "ensurepip", "lib2to3", "venv", "pydoc_data", "pydoc.py", "distutils",
    "multiprocessing", "concurrent", "curses", "dbm", "sqlite3", "ctypes",
    "msilib", "wsgiref", "xmlrpc", "_pydecimal.py", "_osx_support.py",
    "_aix_support.py", "_bootsubprocess.py", "nturl2path.py",
    "smtpd.py", "imaplib.py", "nntplib.py", "poplib.py", "smtplib.py",
    "ftplib.py", "telnetlib.py", "mailbox.py", "cgi.py", "cgitb.py",
    "crypt.py", "pty.py", "tty.py", "getpass.py", "webbrowser.py",
    "socketserver.py", "asynchat.py", "asyncore.py", "sndhdr.py", "imghdr.py",
    "aifc.py", "sunau.py", "wave.py", "chunk.py", "audioop.py", "xdrlib.py",
    "nis.py", "pipes.py", "mailcap.py", "uu.py", "this.py", "antigravity.py",
}


def keep(rel):
    parts = rel.split("/")
    if parts[0] in DROP:
        return False
    return not any(p in ("test", "tests", "idle_test", "__pycache__") for p in parts[:-1])


def main():
    libdir, sysconfigdata, out = sys.argv[1:]
    if sys.version_info[:3] != (3, 11, 2):
        sys.exit("mkzip.py: run me with Python 3.11.2, the build Python")
    sources = {}
    for root, dirs, files in os.walk(libdir):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(root, f)
                rel = os.path.relpath(path, libdir).replace(os.sep, "/")
                if keep(rel):
                    sources[rel] = path
    sources[os.path.basename(sysconfigdata)] = sysconfigdata
    n = 0
    with zipfile.ZipFile(out + ".tmp", "w", zipfile.ZIP_STORED) as z:
        for rel in sorted(sources):
            with open(sources[rel], "rb") as fh:
                src = fh.read()
            try:
                code = compile(src, f"{PREFIX}/{rel}", "exec", dont_inherit=True, optimize=0)
            except SyntaxError as e:
                print(f"mkzip.py: skipping {rel}: {e}", file=sys.stderr)
                continue
            pyc = bootstrap._code_to_hash_pyc(code, importlib.util.source_hash(src), checked=False)
            info = zipfile.ZipInfo(rel[:-3] + ".pyc", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o444 << 16
            z.writestr(info, bytes(pyc))
            n += 1
    os.replace(out + ".tmp", out)
    print(f"mkzip.py: {n} modules, {os.path.getsize(out)} bytes -> {out}")


if __name__ == "__main__":
    main()
