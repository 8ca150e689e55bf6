# reactor.mk links python.wasm as a reactor: Programs/reactor.c (a copy of
# reactor.c, put there by build.sh) in place of Programs/python.c, with the
# objects, libraries and flags of CPython's own Makefile. build.sh runs it in
# the build directory:
#
#	make -f Makefile -f reactor.mk python-reactor.wasm
#
# -nostartfiles drops wasi-libc's crt1 (reactor.c defines _initialize and
# calls the constructors itself); --no-entry: a reactor has no _start.

Programs/reactor.o: Programs/reactor.c $(PYTHON_HEADERS)
	$(MAINCC) -c $(PY_CORE_CFLAGS) -o $@ Programs/reactor.c

python-reactor.wasm: Programs/reactor.o $(LINK_PYTHON_DEPS)
	$(LINKCC) $(PY_CORE_LDFLAGS) $(LINKFORSHARED) -nostartfiles -Wl,--no-entry -o $@ Programs/reactor.o $(LINK_PYTHON_OBJS) $(LIBS) $(MODLIBS) $(SYSLIBS)
