#!/bin/sh
# build.sh rebuilds the Python runtime that checkers/python embeds:
# python.wasm (CPython 3.11.2 for wasm32-wasi, linked as a reactor with
# reactor/reactor.c as its entry) and python311.zip (the standard library as
# bytecode compiled by the same 3.11.2), laid out under runtime/ as the
# sandbox mounts them.
#
# It needs Debian bookworm's clang (14), lld, llvm, wasi-libc,
# libclang-rt-14-dev-wasm32 and python3.11 (3.11.2, the build Python), and
# fetches the python3.11 and zlib source packages with apt-get source
# through a private sources list (the system's apt configuration is not
# touched). Run it through `make python-wasm`.
#
#	WORK=/tmp/assay-python-build  scratch directory (kept between runs)
#	OUT=checkers/python/runtime     where the results are written
set -eu

here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-/tmp/assay-python-build}
out=${OUT:-$here/runtime}
jobs=${JOBS:-$(nproc)}
buildpy=/usr/bin/python3.11
version=3.11.2

mkdir -p "$work" "$out"
work=$(cd "$work" && pwd)

need() { command -v "$1" >/dev/null || { echo "build.sh: $1 not found ($2)" >&2; exit 1; }; }
need clang "apt-get install clang lld llvm"
need wasm-ld "apt-get install lld"
need llvm-strip-14 "apt-get install llvm"
need llvm-ar-14 "apt-get install llvm"
need $buildpy "apt-get install python3.11"
test -f /usr/lib/wasm32-wasi/libc.a || { echo "build.sh: apt-get install wasi-libc" >&2; exit 1; }
test -f /usr/lib/llvm-14/lib/clang/14.0.6/lib/wasi/libclang_rt.builtins-wasm32.a ||
	{ echo "build.sh: apt-get install libclang-rt-14-dev-wasm32" >&2; exit 1; }
got=$($buildpy -c 'import platform; print(platform.python_version())')
test "$got" = "$version" || { echo "build.sh: $buildpy is $got, want $version" >&2; exit 1; }

# Sources: Debian's python3.11 and zlib, via a private apt state.
src=$work/src
if ! ls -d "$src"/python3.11-$version >/dev/null 2>&1; then
	mkdir -p "$src" "$work/apt/lists/partial"
	cat >"$work/apt/sources.list" <<EOS
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
EOS
	aptopts="-o Dir::Etc::SourceList=$work/apt/sources.list -o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists=$work/apt/lists"
	# shellcheck disable=SC2086
	apt-get $aptopts update
	# shellcheck disable=SC2086
	(cd "$src" && apt-get $aptopts source python3.11 zlib)
fi
pysrc=$(ls -d "$src"/python3.11-$version)
zsrc=$(ls -d "$src"/zlib-1.*)

# A private sysroot with only Debian's wasm32-wasi headers and libraries, so
# configure cannot find host headers (curses, sqlite3, ...).
sysroot=$work/sysroot
mkdir -p "$sysroot/lib"
ln -sfn /usr/include/wasm32-wasi "$sysroot/include"
ln -sfn /usr/lib/wasm32-wasi "$sysroot/lib/wasm32-wasi"

CC="clang --target=wasm32-wasi --sysroot=$sysroot"
# For the same bytes from every build: no build date (sys.version shows
# xx/xx/xx) and no scratch paths in __FILE__.
CFLAGS="-Wno-builtin-macro-redefined -U__DATE__ -U__TIME__ -ffile-prefix-map=$work=/build"
AR=llvm-ar-14
RANLIB=llvm-ranlib-14
export AR RANLIB

# zlib, static, for wasm32-wasi.
zprefix=$work/zlib
if ! test -f "$zprefix/lib/libz.a"; then
	rm -rf "$work/zbuild" && cp -r "$zsrc" "$work/zbuild"
	(cd "$work/zbuild" && CC="$CC" CFLAGS="-O2 $CFLAGS" CHOST=wasm32 ./configure --static &&
		make -j"$jobs" libz.a)
	mkdir -p "$zprefix/lib" "$zprefix/include"
	cp "$work/zbuild/libz.a" "$zprefix/lib/"
	cp "$work/zbuild/zlib.h" "$work/zbuild/zconf.h" "$zprefix/include/"
fi

# CPython.
site=$work/config.site
cat "$pysrc/Tools/wasm/config.site-wasm32-wasi" >"$site"
cat >>"$site" <<'EOS'
# wazero has no absolute-time clock_nanosleep: time.sleep() would fail
ac_cv_func_clock_nanosleep=no
ac_cv_lib_rt_clock_nanosleep=no
EOS
touch "$pysrc/Modules/Setup.local"
# configure is run by a relative path, so that no path of the scratch
# directory (VPATH, include flags) is compiled in.
bdir=$work/build
if ! test -f "$bdir/python.wasm"; then
	rm -rf "$bdir" && mkdir -p "$bdir"
	(cd "$bdir" &&
		CONFIG_SITE=$site CC="$CC" CPP="$CC -E" CFLAGS="$CFLAGS" \
			PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR="$work/nopkgconfig" \
			ZLIB_CFLAGS="-I$zprefix/include" ZLIB_LIBS="-L$zprefix/lib -lz" \
			"../src/$(basename "$pysrc")/configure" --host=wasm32-unknown-wasi --build=x86_64-pc-linux-gnu \
			--with-build-python=$buildpy --prefix=/usr/local \
			--disable-test-modules --without-ensurepip &&
		make -j"$jobs")
fi
# The reactor: reactor.c in place of Programs/python.c, linked by CPython's
# own Makefile (reactor/reactor.mk). It is copied in only when it changed,
# so that make sees an unchanged file as up to date.
cmp -s "$here/reactor/reactor.c" "$bdir/Programs/reactor.c" ||
	cp "$here/reactor/reactor.c" "$bdir/Programs/reactor.c"
(cd "$bdir" && make -f Makefile -f "$here/reactor/reactor.mk" python-reactor.wasm)

# The layout the sandbox mounts at /usr/local: Python finds its prefix by the
# lib-dynload directory (empty: every extension module is built in) and reads
# the standard library from the zip.
mkdir -p "$out/usr/local/lib/python3.11/lib-dynload"
echo "Empty on purpose: python.wasm has its extension modules built in." >"$out/usr/local/lib/python3.11/lib-dynload/README"
llvm-strip-14 -o "$out/python.wasm" "$bdir/python-reactor.wasm"
# sysconfig's data, with the scratch directory's name taken out.
sysconfigdata=$work/_sysconfigdata__wasi_wasm32-wasi.py
$buildpy - "$bdir"/build/lib.wasi-wasm32-3.11/_sysconfigdata__wasi_wasm32-wasi.py "$sysconfigdata" "$work" <<'EOS'
import pprint, sys
src, dst, work = sys.argv[1:]
ns = {}
exec(open(src).read(), ns)
v = {k: x.replace(work, "/build") if isinstance(x, str) else x for k, x in ns["build_time_vars"].items()}
with open(dst, "w") as f:
    f.write("# system configuration generated and used by the sysconfig module\n")
    f.write("build_time_vars = " + pprint.pformat(v) + "\n")
EOS
$buildpy "$here/mkzip.py" "$pysrc/Lib" "$sysconfigdata" "$out/usr/local/lib/python311.zip"
{
	echo "CPython $version for wasm32-wasi, a reactor (reactor/reactor.c)"
	echo "source: $(basename "$(ls "$src"/python3.11_*.dsc)") $(basename "$(ls "$src"/zlib_*.dsc)")"
	echo "toolchain: $(clang --version | head -1); wasi-libc $(dpkg-query -W -f '${Version}' wasi-libc)"
	echo "build python: $($buildpy -VV | head -1) ($(dpkg-query -W -f '${Version}' python3.11))"
	cd "$out" && sha256sum python.wasm usr/local/lib/python311.zip
} >"$out/BUILDINFO"
cat "$out/BUILDINFO"
