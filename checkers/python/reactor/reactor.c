/*
 * reactor.c is python.wasm's entry: CPython 3.11 as a reactor of the
 * checker ABI (see RATIONALE.md). It replaces Programs/python.c in the link
 * and exports two functions:
 *
 *   _initialize  runs the C constructors, starts the interpreter with the
 *                flags `python -I -S -B` had, loads /checker/harness.py and
 *                calls its init(), which imports the modules checkers use.
 *                The sandbox runs it once and snapshots the instance.
 *   assay_check  calls the harness's check(): one checker against /in, its
 *                status returned (0 pass, anything else fail).
 *
 * The interpreter is never finalized: an instance serves one check.
 */
#include "Python.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HARNESS "/checker/harness.py"

/* The status assay_check returns when the harness itself fails. */
#define STATUS_BROKEN 70

extern void __wasm_call_ctors(void);

/* The harness's check(), set by _initialize. */
static PyObject *check;

/* fatal reports a start-up failure and traps: a reactor that cannot start
 * must not answer a check. */
static void fatal(const char *what) {
    fprintf(stderr, "python.wasm: %s\n", what);
    fflush(stderr);
    __builtin_trap();
}

static void fatal_status(PyStatus st) {
    fprintf(stderr, "python.wasm: %s: %s\n", st.func ? st.func : "start-up", st.err_msg ? st.err_msg : "failed");
    fflush(stderr);
    __builtin_trap();
}

/* readall returns the whole of path, NUL-terminated, or NULL. */
static char *readall(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    size_t n = 0, cap = 1 << 14;
    char *buf = malloc(cap);
    while (buf != NULL) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1) {
            break;
        }
        cap *= 2;
        char *more = realloc(buf, cap);
        if (more == NULL) {
            free(buf);
        }
        buf = more;
    }
    int bad = ferror(f);
    fclose(f);
    if (buf == NULL || bad) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    return buf;
}

static void start(void) {
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    /* -I: no environment, no user site, no script directory on sys.path. */
    config.isolated = 1;
    /* -S: no site module. */
    config.site_import = 0;
    /* -B: no bytecode writes. */
    config.write_bytecode = 0;
    config.parse_argv = 0;
    config.install_signal_handlers = 0;
    /* Python finds its prefix, /usr/local, by lib/python311.zip beside the
     * directory of this fictitious executable. */
    PyStatus st = PyConfig_SetString(&config, &config.program_name, L"/usr/local/bin/python3.11");
    if (!PyStatus_Exception(st)) {
        wchar_t *argv[] = {L""};
        st = PyConfig_SetArgv(&config, 1, argv);
    }
    if (!PyStatus_Exception(st)) {
        st = Py_InitializeFromConfig(&config);
    }
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
        fatal_status(st);
    }
}

/* load runs the harness as a module named _assay_harness that is not in
 * sys.modules, and returns it. */
static PyObject *load(void) {
    char *src = readall(HARNESS);
    if (src == NULL) {
        fatal("cannot read " HARNESS);
    }
    PyObject *code = Py_CompileString(src, HARNESS, Py_file_input);
    free(src);
    if (code == NULL) {
        return NULL;
    }
    PyObject *mod = PyModule_New("_assay_harness");
    if (mod == NULL) {
        Py_DECREF(code);
        return NULL;
    }
    PyObject *ns = PyModule_GetDict(mod);
    PyObject *file = PyUnicode_FromString(HARNESS);
    if (file == NULL || PyDict_SetItemString(ns, "__file__", file) < 0 ||
        PyDict_SetItemString(ns, "__builtins__", PyEval_GetBuiltins()) < 0) {
        Py_XDECREF(file);
        Py_DECREF(code);
        Py_DECREF(mod);
        return NULL;
    }
    Py_DECREF(file);
    PyObject *r = PyEval_EvalCode(code, ns, ns);
    Py_DECREF(code);
    if (r == NULL) {
        Py_DECREF(mod);
        return NULL;
    }
    Py_DECREF(r);
    return mod;
}

__attribute__((export_name("_initialize"))) void _initialize(void) {
    __wasm_call_ctors();
    start();
    PyObject *harness = load();
    PyObject *r = NULL;
    if (harness != NULL) {
        check = PyObject_GetAttrString(harness, "check");
        r = PyObject_CallMethod(harness, "init", NULL);
        Py_DECREF(harness);
    }
    if (r == NULL || check == NULL) {
        PyErr_Print();
        fatal("the harness did not start");
    }
    Py_DECREF(r);
}

__attribute__((export_name("assay_check"))) int assay_check(void) {
    if (check == NULL) {
        fputs("python.wasm: assay_check before _initialize\n", stderr);
        return STATUS_BROKEN;
    }
    PyObject *r = PyObject_CallNoArgs(check);
    if (r == NULL) {
        /* check() reports the checker's exceptions itself: this is the
         * harness failing (a MemoryError while reporting, say). */
        PyErr_Print();
        fflush(stderr);
        return STATUS_BROKEN;
    }
    long status = PyLong_AsLong(r);
    Py_DECREF(r);
    if (status == -1 && PyErr_Occurred()) {
        PyErr_Print();
        return STATUS_BROKEN;
    }
    return (int)status;
}
