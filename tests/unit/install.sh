#!/bin/bash
# tests/unit/install.sh: `make install` into a temporary DESTDIR, with the
# default PREFIX and with another one: the files and symlinks expected and
# nothing else, the soname, a program built only from what pkg-config says
# (shared, and static against libnvmeof.a with Requires.private and
# Libs.private) that runs, the tool; then `make uninstall` leaves no file
# behind. Without fio's source (FIO_SRC elsewhere) all but the fio engine
# installs, and one line says so.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/tally.sh
check() { local what=$1; shift; if out=$("$@" 2>&1); then ok "$what"; else bad "$what" "$out"; fi; }
command -v pkg-config >/dev/null || { echo "install: pkg-config missing (tests/testbed/setup installs it)"; exit 1; }
top=$(mktemp -d)
trap 'rm -rf "$top"' EXIT
version=$(sed -n 's/^VERSION = //p' Makefile)

expected_files() { # PREFIX [noengine], relative to DESTDIR
  local p=${1#/}
  printf '%s\n' "$p/bin/nvmeof" "$p/include/nvmeof.h" "$p/lib/libnvmeof.so.$version" "$p/lib/libnvmeof.so.0" \
    "$p/lib/libnvmeof.so" "$p/lib/libnvmeof.a" "$p/lib/pkgconfig/nvmeof.pc" \
    "$p/share/nvmeof/jobs/run" "$p/share/nvmeof/jobs/common.fio.inc" "$p/share/nvmeof/jobs/kdev.sh" \
    "$p/share/nvmeof/jobs/jobfile.py" "$p/share/man/man1/nvmeof.1" "$p/share/man/man7/nvmeof-fio.7" "$p/share/bash-completion/completions/nvmeof"
  [ "${2:-}" = noengine ] || echo "$p/lib/fio/libnvmeof_fio.so"
  for j in jobs/*.fio; do echo "$p/share/nvmeof/jobs/${j#jobs/}"; done
}

for prefix in "" /opt/nvmeof-test /opt/nvmeof-nofio; do
  p=${prefix:-/usr/local}
  d=$top/root${prefix//\//_}
  mkdir -p "$d"
  name="PREFIX=${prefix:-(default)}"
  nofio=
  [ "$prefix" != /opt/nvmeof-nofio ] || { nofio=noengine; name="$name, no fio source"; }
  if ! make -s --no-print-directory install DESTDIR="$d" ${prefix:+PREFIX=$prefix} \
       ${nofio:+FIO_SRC=$top/no-fio-source} > "$top/log" 2>&1; then
    bad "$name: make install" "$(tail -5 "$top/log")"
    continue
  fi
  if [ -n "$nofio" ]; then
    n=$(grep -c "fio engine is left out: fio's source is not in $top/no-fio-source" "$top/log")
    check "$name: one line says the engine is left out" test "$n" = 1
  else
    check "$name: nothing said about the engine" bash -c "! grep -q 'left out' '$top/log'"
  fi
  (cd "$d" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort) > "$top/got"
  expected_files "$p" $nofio | sort > "$top/want"
  check "$name: installs exactly the expected files" diff "$top/want" "$top/got"
  check "$name: the installed tool runs and says $version" \
    test "$(LD_LIBRARY_PATH=$d$p/lib "$d$p/bin/nvmeof" --version | head -1)" = "nvmeof version $version"
  lib=$d$p/lib
  check "$name: libnvmeof.so.0 and libnvmeof.so link to libnvmeof.so.$version" \
    test "$(readlink "$lib/libnvmeof.so.0")" = "libnvmeof.so.$version" -a \
    "$(readlink "$lib/libnvmeof.so")" = "libnvmeof.so.$version"
  soname=$(readelf -d "$lib/libnvmeof.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  check "$name: soname is libnvmeof.so.0 (got '$soname')" test "$soname" = libnvmeof.so.0
  check "$name: jobs/run defaults to the installed engine" \
    grep -q "ENGINE:-$p/lib/fio/libnvmeof_fio.so}" "$d$p/share/nvmeof/jobs/run"
  check "$name: the installed jobs/run --list names its job files" \
    bash -c "'$d$p/share/nvmeof/jobs/run' --list | grep -q '^  iops.fio'"

  # A program built from pkg-config alone; the sysroot maps the .pc's paths
  # into DESTDIR.
  export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$d
  check "$name: pkg-config knows nvmeof $version" test "$(pkg-config --modversion nvmeof)" = "$version"
  prog=$d/prog
  # shellcheck disable=SC2046
  if cc -o "$prog" tests/unit/install_prog.c $(pkg-config --cflags --libs nvmeof) 2> "$top/log"; then
    needed=$(readelf -d "$prog" | sed -n 's/.*(NEEDED).*\[\(libnvmeof.*\)\]/\1/p')
    check "$name: the program needs libnvmeof.so.0 (got '$needed')" test "$needed" = libnvmeof.so.0
    check "$name: it loads the installed library" \
      bash -c "LD_LIBRARY_PATH='$lib' ldd '$prog' | grep -q 'libnvmeof.so.0 => $lib/libnvmeof.so.0 '"
    if out=$(LD_LIBRARY_PATH=$lib "$prog" 2>&1) && [ "$out" = "invalid argument | connect: no target address (traddr) | depth 128" ]; then
      ok "$name: it runs: $out"
    else
      bad "$name: it runs" "$out"
    fi
  else
    bad "$name: cc \$(pkg-config --cflags --libs nvmeof)" "$(head -5 "$top/log")"
  fi
  # Static libnvmeof: the rest comes from Requires.private and Libs.private.
  # shellcheck disable=SC2046
  if cc -o "$prog-static" tests/unit/install_prog.c $(pkg-config --cflags nvmeof) \
       -Wl,-Bstatic $(pkg-config --libs-only-L nvmeof) -lnvmeof -Wl,-Bdynamic \
       $(pkg-config --static --libs nvmeof | sed 's/-lnvmeof\b//') 2> "$top/log"; then
    if readelf -d "$prog-static" | grep -q 'NEEDED.*libnvmeof'; then
      bad "$name: static link" "it still needs the shared libnvmeof"
    elif out=$("$prog-static" 2>&1); then
      ok "$name: linked with libnvmeof.a and pkg-config --static, it runs"
    else
      bad "$name: static program runs" "$out"
    fi
  else
    bad "$name: cc ... libnvmeof.a \$(pkg-config --static --libs nvmeof)" "$(grep -m3 'undefined\|error' "$top/log")"
  fi
  unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
  rm -f "$prog" "$prog-static"

  if make -s --no-print-directory uninstall DESTDIR="$d" ${prefix:+PREFIX=$prefix} > "$top/log" 2>&1; then
    left=$(cd "$d" && find . \( -type f -o -type l \) | sed 's|^\./||')
    if [ -z "$left" ]; then ok "$name: make uninstall leaves no file behind"
    else bad "$name: make uninstall leaves no file behind" "left: $(echo $left)"; fi
    check "$name: nor its own directories (share/nvmeof, lib/fio)" \
      test ! -e "$d$p/share/nvmeof" -a ! -e "$d$p/lib/fio"
  else
    bad "$name: make uninstall" "$(tail -5 "$top/log")"
  fi
done
# make build-deps: what building needs from apt, and only that (no QEMU,
# kernel or valgrind), asked of stand-ins for dpkg-query (nothing installed)
# and apt-get (records what it is asked)
mkdir -p "$top/stub"
printf '#!/bin/sh\nexit 1\n' > "$top/stub/dpkg-query"
printf '#!/bin/sh\necho "$*" >> %s/apt.log\n' "$top" > "$top/stub/apt-get"
chmod +x "$top/stub/dpkg-query" "$top/stub/apt-get"
if PATH=$top/stub:$PATH make -s --no-print-directory build-deps > "$top/log" 2>&1; then
  asked=$(grep '^install ' "$top/apt.log" | tr ' ' '\n' | grep -v '^-' | grep -vx install | sort | tr '\n' ' ')
  check "build-deps asks apt for the build's packages only: $asked" \
    test "$asked" = "fio gcc libc6-dev libibverbs-dev libisal-dev libnuma-dev librdmacm-dev libssl-dev make pkg-config "
else
  bad "make build-deps" "$(tail -5 "$top/log")"
fi
tally "install"
