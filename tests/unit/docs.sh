#!/bin/bash
# tests/unit/docs.sh [BUILD_DIR]: the documents against the code, no target.
# - every subcommand of the tool (its --help and the raw-command ones it
#   dispatches) has a section in nvmeof(1) and is named in docs/tool.md, and
#   every long option each subcommand's --help lists is in nvmeof(1);
# - every option of the fio engine (its option table in engine/options.c,
#   and fio --enghelp where fio is installed) has an entry in docs/engine.md
#   and in nvmeof-fio(7), no entry names an option the engine lacks, and each
#   entry's default is the table's (.def) or the library's (--enghelp);
# - man/nvmeof-fio.7 is what man/engine-man.py makes of docs/engine.md;
# - groff (and man -l) render both pages without a warning;
# - the bash completion offers every subcommand and a subcommand's options;
# - jobs/nvmeof-example.fio, unedited, runs from the build tree with plain fio
#   and this engine given as its header says (IOENGINE, FILENAME): it gets as
#   far as connecting (no RDMA device is visible here) with no option refused;
# - no document, help text or comment names an issue number or reads as a
#   work log.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build/out}
TOOL=$B/nvmeof
ENG=$PWD/$B/libnvmeof_fio.so
source tests/tally.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- the tool ----------------------------------------------------------------
# a roff name as the page writes it: every '-' escaped
roff() { sed 's/-/\\-/g' <<< "$1"; }
subs=$("$TOOL" --help 2>&1 | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p')
subs="$subs $(sed -n 's/.*strcmp(argv\[1\], "\([a-z-]*\)").*/\1/p' tools/nvmeof.c)"
[ "$(wc -w <<< "$subs")" -ge 15 ] && ok "the tool lists its subcommands ($(wc -w <<< "$subs"))" ||
  bad "the tool lists its subcommands" "$subs"
missing_man= missing_md= missing_opt=
for s in $subs; do
  grep -qE "^\.SS (.*, )?$(roff "$s" | sed 's/\\/\\\\/g')(,|$)" man/nvmeof.1 || missing_man="$missing_man $s"
  grep -qE "\`(nvmeof )?$s[\` ]" docs/tool.md || missing_md="$missing_md $s"
  for o in $("$TOOL" "$s" --help 2>&1 | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
    grep -qF -- "$(roff "$o")" man/nvmeof.1 || missing_opt="$missing_opt $s:$o"
  done
done
[ -z "$missing_man" ] && ok "nvmeof(1) has a section per subcommand" ||
  bad "nvmeof(1) has a section per subcommand" "missing:$missing_man"
[ -z "$missing_md" ] && ok "docs/tool.md names every subcommand" ||
  bad "docs/tool.md names every subcommand" "missing:$missing_md"
[ -z "$missing_opt" ] && ok "nvmeof(1) has every option of every subcommand's --help" ||
  bad "nvmeof(1) has every option of every subcommand's --help" "missing:$missing_opt"
n=$(grep -c '^Example:' man/nvmeof.1)
[ "$n" -ge "$(grep -c '^\.SS ' man/nvmeof.1)" ] && ok "nvmeof(1): every subcommand's section has an example" ||
  bad "nvmeof(1): every subcommand's section has an example" "$n examples"

# ---- the engine --------------------------------------------------------------
# name and .def of each entry of the option table (and of the entries a
# header's macro puts in it, its lines continued with backslashes)
python3 - engine/options.c engine/tcp_opts.h engine/engine.h > "$tmp/table" <<'PY'
import re, sys
for f in sys.argv[1:]:
    src = re.sub(r"[ \t]*\\\n", "\n", open(f).read())
    table = src[src.index("options[] = {") if "options[] = {" in src else 0:]
    for ent in re.split(r"\n\t\{\.name = ", table)[1:]:
        name = re.match(r'"([^"]+)"', ent)
        if not name:
            continue
        d = re.search(r'\.def = "([^"]*)"', ent.split("\n\t{")[0])
        print(name.group(1), d.group(1) if d else "-")
PY
[ "$(wc -l < "$tmp/table")" -ge 30 ] && ok "engine/options.c: $(wc -l < "$tmp/table") options in its table" ||
  bad "engine/options.c: the option table read" "$(cat "$tmp/table")"
python3 man/engine-man.py docs/engine.md > "$tmp/fio.7"
if cmp -s "$tmp/fio.7" man/nvmeof-fio.7; then ok "man/nvmeof-fio.7 is man/engine-man.py's output of docs/engine.md"
else bad "man/nvmeof-fio.7 is man/engine-man.py's output of docs/engine.md" \
  "regenerate: python3 man/engine-man.py > man/nvmeof-fio.7" "$(diff "$tmp/fio.7" man/nvmeof-fio.7 | head -5)"; fi
# the entry of an option in docs/engine.md: its heading, then "Default: X."
entry_default() { sed -n "/^#### \`$1=/{n;s/^Default: \([^.]*\)\..*/\1/p;q}" docs/engine.md |
  sed 's/ \*(library)\*//; s/`//g'; }
nodoc= noman= wrongdef=
while read -r name def; do
  grep -q "^#### \`$name=" docs/engine.md || { nodoc="$nodoc $name"; continue; }
  grep -qF "\\fB$(roff "$name")\\fR=" man/nvmeof-fio.7 || noman="$noman $name"
  if [ "$def" != - ] && [ "$(entry_default "$name")" != "$def" ]; then
    wrongdef="$wrongdef $name(table $def, docs $(entry_default "$name"))"
  fi
done < "$tmp/table"
[ -z "$nodoc" ] && ok "docs/engine.md has an entry per engine option" ||
  bad "docs/engine.md has an entry per engine option" "missing:$nodoc"
[ -z "$noman" ] && ok "nvmeof-fio(7) has an entry per engine option" ||
  bad "nvmeof-fio(7) has an entry per engine option" "missing:$noman"
[ -z "$wrongdef" ] && ok "docs/engine.md's defaults are the option table's" ||
  bad "docs/engine.md's defaults are the option table's" "$wrongdef"
stale=$(sed -n 's/^#### `\([a-z_]*\)=.*/\1/p' docs/engine.md | while read -r o; do
  grep -q "^$o " "$tmp/table" || echo "$o"; done)
[ -z "$stale" ] && ok "docs/engine.md names no option the engine lacks" ||
  bad "docs/engine.md names no option the engine lacks" "$stale"

if command -v fio >/dev/null; then
  help=$(fio --enghelp="$ENG" 2>&1)
  names=$(sed -n 's/^\([a-z_]*\) *:.*/\1/p' <<< "$help")
  diff <(sort <<< "$names") <(cut -d' ' -f1 "$tmp/table" | sort) > "$tmp/d" &&
    ok "fio --enghelp lists the table's options" || bad "fio --enghelp lists the table's options" "$(cat "$tmp/d")"
  # the library's defaults, as --enghelp prints them
  libdef= ndef=0
  while IFS='|' read -r name def; do
    ndef=$((ndef + 1))
    [ "$(entry_default "$name")" = "$def" ] || libdef="$libdef $name(enghelp $def, docs $(entry_default "$name"))"
  done < <(sed -n 's/^\([a-z_]*\) *:.*; default \([^ ;]*\)$/\1|\2/p' <<< "$help")
  # none read would check nothing: fio's --enghelp format changed
  [ -z "$libdef" ] && [ "$ndef" -gt 0 ] && ok "docs/engine.md's library defaults are --enghelp's ($ndef)" ||
    bad "docs/engine.md's library defaults are --enghelp's" "$ndef read from --enghelp;$libdef"
  # the example job file, as it is: plain fio, this engine, no RDMA device visible
  mkdir -p "$tmp/nosysfs"
  pre=
  readelf -d "$ENG" | grep -q 'NEEDED.*libasan' && pre=$(${CC:-cc} -print-file-name=libasan.so)
  rc=0
  out=$(IOENGINE=external:$ENG FILENAME='trtype=RDMA traddr=192.0.2.20 subnqn=nqn.2026-07.io.example\:storage ns=1' \
    SYSFS_PATH=$tmp/nosysfs LD_PRELOAD=$pre ASAN_OPTIONS=detect_leaks=0 timeout 60 fio jobs/nvmeof-example.fio 2>&1) || rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q 'no RDMA device on this host' <<< "$out" &&
     ! grep -qiE 'expected a|bad option|invalid|unknown|conflicts' <<< "$out"; then
    ok "jobs/nvmeof-example.fio runs unedited with plain fio and gets as far as connecting"
  else
    bad "jobs/nvmeof-example.fio runs unedited with plain fio and gets as far as connecting" "rc $rc: $(head -c 600 <<< "$out")"
  fi
  # troubleshooting.md quotes what fio says of a wrong engine path
  out=$(fio --name=t --ioengine=external:"$tmp/no/libnvmeof_fio.so" --filename=x --size=1m 2>&1)
  want=$(sed -n 's/.*`external:` makes fio [0-9.]* print `\(fio: [^"]*\)"PATH"`.*/\1/p' docs/troubleshooting.md)
  [ -n "$want" ] && grep -qF "$want\"$tmp/no/libnvmeof_fio.so\"" <<< "$out" &&
    ok "docs/troubleshooting.md quotes fio's wrong-engine-path message" ||
    bad "docs/troubleshooting.md quotes fio's wrong-engine-path message" "docs: '$want'" "fio: $out"
else
  skip "fio --enghelp against docs/engine.md" "fio is not installed"
fi

# an installed user has no docs/: the man page describes the engine's lines
eoj=$(man -l man/nvmeof-fio.7 2>/dev/null | sed -n '/^THE END-OF-JOB LINES/,/^[A-Z]/p')
for l in "nvmeof: engine" "controller CNTLID" "placement:" "connect retries"; do
  grep -qF "$l" <<< "$eoj" ||
    { bad "nvmeof-fio(7) describes the end-of-job lines" "no '$l' in its section THE END-OF-JOB LINES"; l=; break; }
done
[ -z "$l" ] || ok "nvmeof-fio(7) describes the end-of-job lines"

# ---- rendering ---------------------------------------------------------------
for page in man/nvmeof.1 man/nvmeof-fio.7; do
  w=$(groff -man -ww -z "$page" 2>&1)
  [ -z "$w" ] && ok "$page: groff -man -ww renders it without a warning" ||
    bad "$page: groff -man -ww renders it without a warning" "$w"
  if command -v man >/dev/null; then
    w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$page" 2>&1 >/dev/null)
    [ -z "$w" ] && ok "$page: man -l renders it without a warning" || bad "$page: man -l renders it without a warning" "$w"
  else
    skip "$page: man -l renders it without a warning" "man is not installed"
  fi
done

# ---- bash completion ---------------------------------------------------------
comp=$(bash -c 'source contrib/bash-completion/nvmeof
  comp() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _nvmeof; echo "${COMPREPLY[*]}"; }
  comp "$1" ""; comp "$1" read --st; comp "$1" list-rdma --output-format=
  comp "$1" discover -t ""; comp "$1" discover -o ""
  comp "$1" gen-tls-key --hmac=; comp "$1" check-tls-key -t ""; comp "$1" check-tls-key --subs' _ "$TOOL" 2>&1)
first=$(sed -n 1p <<< "$comp")
nocomp=
for s in $subs; do grep -qw -- "$s" <<< "$first" || nocomp="$nocomp $s"; done
[ -z "$nocomp" ] && ok "the bash completion offers every subcommand" ||
  bad "the bash completion offers every subcommand" "missing:$nocomp; got: $first"
[ "$(sed -n 2p <<< "$comp")" = "--start-block" ] && [ "$(sed -n 3p <<< "$comp")" = "normal json" ] &&
  [ "$(sed -n 4p <<< "$comp")" = "rdma tcp" ] && [ "$(sed -n 5p <<< "$comp")" = "normal json fio" ] &&
  [ "$(sed -n 6p <<< "$comp")" = "1 2" ] && [ "$(sed -n 7p <<< "$comp")" = "" ] &&
  [ "$(sed -n 8p <<< "$comp")" = "--subsysnqn" ] &&
  ok "the bash completion offers a subcommand's options and their values" ||
  bad "the bash completion offers a subcommand's options and their values" "$comp"

# ---- no issue numbers, no work log -------------------------------------------
# in every tracked document, help text and comment (this script names the
# patterns, so it is left out); outside a git checkout there is nothing to
# list, and that checks nothing
if ! git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  skip "no document or comment names an issue number or reads as a work log" "not a git checkout: git ls-files lists nothing"
else
git ls-files -z -- '*.md' '*.c' '*.h' '*.sh' '*.py' '*.fio' '*.inc' Makefile man contrib jobs bench tests tools engine \
  core python .ci | xargs -0 grep -nIE '\b[Ii]ssues? #?[0-9]+|\(#[0-9]+\)|\b[Pp]art [0-9]+\b|next run of work|(this|next|the last) session|moved from the README' -- \
  2>/dev/null | grep -v '^tests/unit/docs.sh:' > "$tmp/log"
[ ! -s "$tmp/log" ] && ok "no document or comment names an issue number or reads as a work log" ||
  bad "no document or comment names an issue number or reads as a work log" "$(head -10 "$tmp/log")"
fi

tally "docs"
