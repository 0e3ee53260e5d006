#!/bin/bash
# tests/unit/secrets.sh [BUILD_DIR]: no message of the nvmeof tool ever
# contains a DH-HMAC-CHAP secret, whatever option or word it came in, and the
# secret options behave as nvme-cli's (-S, -C) with file forms that warn
# about loose permissions; the fio engine warns the same way, and about a
# secret inline in a job. No target needed: every case fails before or at
# the connect (127.0.0.1 port 1 answers nothing RDMA).
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build/out}
T=$B/nvmeof
source tests/tally.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# nvme-cli's test key (32 bytes 00..1f, SHA-256), and its base64 body: no
# message may hold any 16 characters of it
KEY="DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:"
BODY=${KEY:10:40}
C=(-a 127.0.0.1 -s 1 -n nqn.2026-12.io.example:none -t 2000)

# never_shown NAME ARGS...: the tool fails, and nothing it prints holds the secret
never_shown() {
  local name=$1 rc=0; shift
  timeout 30 "$T" "$@" > "$tmp/out" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then bad "$name" "succeeded: $(head -2 "$tmp/out")"; return; fi
  if [ "$rc" = 124 ]; then bad "$name" "hung"; return; fi
  local i
  for ((i = 0; i + 16 <= ${#BODY}; i += 4)); do
    if grep -qF "${BODY:i:16}" "$tmp/out"; then bad "$name" "the secret in: $(head -3 "$tmp/out")"; return; fi
  done
  ok "$name: $(grep -v warning "$tmp/out" | head -1 | cut -c1-110)"
}

never_shown "-S where -S was --lsp" get-log "${C[@]}" -i 2 -l 512 -S "$KEY"
never_shown "-S joined to its value" id-ctrl "${C[@]}" -S"$KEY" --bogus
never_shown "--dhchap-secret= on a bad option" id-ctrl "${C[@]}" --dhchap-secret="$KEY" --nonsense=1
never_shown "a secret as a number" id-ctrl "${C[@]}" -t "$KEY"
never_shown "a secret as --lsp" get-log "${C[@]}" -i 2 -l 512 --lsp "$KEY"
never_shown "a secret as output format" id-ctrl "${C[@]}" -o "$KEY"
never_shown "a secret as a stray argument" id-ctrl "${C[@]}" "$KEY"
never_shown "a secret as the subcommand" "$KEY" "${C[@]}"
never_shown "a secret as an option of another subcommand" id-ctrl "${C[@]}" -d "$KEY"
never_shown "-C without -S" id-ctrl "${C[@]}" -C "$KEY"
never_shown "a mistyped secret (CRC)" id-ctrl "${C[@]}" -S "${KEY%?????}AAAA:"
never_shown "a length that is not its hash's" id-ctrl "${C[@]}" \
  -S "DHHC-1:02:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:"
never_shown "-S and -C with nobody there" id-ctrl "${C[@]}" -S "$KEY" -C "$KEY"
never_shown "an unknown hash to offer" id-ctrl "${C[@]}" -S "$KEY" --dhchap-hashes=sha256,md5

# the file forms
printf '%s\n' "$KEY" > "$tmp/k"
chmod 644 "$tmp/k"
never_shown "--dhchap-secret-file" id-ctrl "${C[@]}" --dhchap-secret-file="$tmp/k"
if grep -q "readable by group or others" "$tmp/out"; then ok "a 0644 secret file draws a warning"
else bad "a 0644 secret file draws a warning" "$(head -3 "$tmp/out")"; fi
chmod 600 "$tmp/k"
never_shown "--dhchap-ctrl-secret-file, 0600" id-ctrl "${C[@]}" -S "$KEY" --dhchap-ctrl-secret-file="$tmp/k"
if ! grep -q "readable by group" "$tmp/out"; then ok "a 0600 secret file draws none"
else bad "a 0600 secret file draws none" "$(head -3 "$tmp/out")"; fi
if grep -q "visible to other users" "$tmp/out"; then ok "a secret on the command line draws a warning"
else bad "a secret on the command line draws a warning" "$(head -3 "$tmp/out")"; fi
never_shown "both -S and --dhchap-secret-file" id-ctrl "${C[@]}" -S "$KEY" --dhchap-secret-file="$tmp/k"
if grep -q "not both" "$tmp/out"; then ok "both forms are refused"; else bad "both forms are refused" "$(cat "$tmp/out")"; fi
: > "$tmp/empty"
never_shown "an empty secret file" id-ctrl "${C[@]}" --dhchap-secret-file="$tmp/empty"
never_shown "a missing secret file" id-ctrl "${C[@]}" --dhchap-secret-file="$tmp/none"

# the engine: the same warnings (fio's own output holds the options of a
# job, which is why an inline secret draws one)
chmod 644 "$tmp/k"
# fio is not instrumented: a sanitized engine needs the ASan runtime first
PRE=()
readelf -d "$PWD/$B/libnvmeof_fio.so" | grep -q 'NEEDED.*libasan' &&
  PRE=(env LD_PRELOAD="$(${CC:-cc} -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0)
timeout 60 "${PRE[@]}" fio --name=s --ioengine=external:"$PWD/$B/libnvmeof_fio.so" --filename="traddr=127.0.0.1 subnqn=nqn.x ns=1" \
  --dhchap_secret_file="$tmp/k" --dhchap_ctrl_secret="$KEY" --rw=read --size=1m > "$tmp/fio.out" 2> "$tmp/fio.err"
if grep -q "dhchap_secret_file '$tmp/k' is readable by group or others" "$tmp/fio.err"; then
  ok "the engine warns about a 0644 secret file"
else bad "the engine warns about a 0644 secret file" "$(head -5 "$tmp/fio.err")"; fi
if grep -q "warning: dhchap_ctrl_secret in the job" "$tmp/fio.err"; then ok "the engine warns about an inline secret"
else bad "the engine warns about an inline secret" "$(head -5 "$tmp/fio.err")"; fi
if ! grep -qF "${BODY:0:16}" "$tmp/fio.err"; then ok "no secret in the engine's messages"
else bad "no secret in the engine's messages" "$(head -5 "$tmp/fio.err")"; fi
chmod 600 "$tmp/k"
timeout 60 fio --name=s --ioengine=external:"$PWD/$B/libnvmeof_fio.so" --filename="traddr=127.0.0.1 subnqn=nqn.x ns=1" \
  --dhchap_secret_file="$tmp/k" --rw=read --size=1m > "$tmp/fio.out" 2> "$tmp/fio.err"
if ! grep -q "warning" "$tmp/fio.err"; then ok "a 0600 file and no inline secret: no warning"
else bad "a 0600 file and no inline secret: no warning" "$(head -5 "$tmp/fio.err")"; fi

# a secret file read leaves no copy in freed heap memory (stdio's buffer
# went back to malloc holding it): plain builds, where the shim may come first
if ! readelf -d "$T" "$B/libnvmeof_fio.so" | grep -q 'NEEDED.*libasan'; then
  ${CC:-cc} -shared -fPIC -O2 -o "$tmp/freescan.so" tests/unit/freescan.c -ldl
  LD_PRELOAD="$tmp/freescan.so" timeout 30 "$T" id-ctrl "${C[@]}" --dhchap-secret-file="$tmp/k" > "$tmp/out" 2>&1
  if ! grep -q freescan "$tmp/out"; then ok "the tool frees no copy of a secret file"
  else bad "the tool frees no copy of a secret file" "$(head -3 "$tmp/out")"; fi
  LD_PRELOAD="$tmp/freescan.so" timeout 60 fio --name=s --ioengine=external:"$PWD/$B/libnvmeof_fio.so" \
    --filename="traddr=127.0.0.1 subnqn=nqn.x ns=1" --dhchap_secret_file="$tmp/k" --rw=read --size=1m \
    > "$tmp/fio.out" 2> "$tmp/fio.err"
  if ! grep -q freescan "$tmp/fio.err"; then ok "the engine frees no copy of a secret file"
  else bad "the engine frees no copy of a secret file" "$(head -3 "$tmp/fio.err")"; fi
  # once the connect has taken the secrets (here: failed), the engine
  # holds none: memscan reads the process's private memory, live and
  # freed, at the engine's first message (the connect's failure); in a
  # job process the probe's child, with thread=1 fio's own process
  ${CC:-cc} -shared -fPIC -O2 -o "$tmp/memscan.so" tests/unit/memscan.c -ldl
  for how in "-S $KEY -C $KEY" "--dhchap-secret-file=$tmp/k --dhchap-ctrl-secret-file=$tmp/k"; do
    # shellcheck disable=SC2086 # the options as words
    LD_PRELOAD="$tmp/memscan.so" timeout 30 "$T" id-ctrl "${C[@]}" $how > "$tmp/out" 2>&1
    what="no secret in the tool's memory after its connect ($([ "${how:0:2}" = -S ] && echo -S -C || echo files))"
    if ! grep -q "nvmeof id-ctrl: " "$tmp/out"; then bad "$what" "no connect failure: $(head -3 "$tmp/out")"
    elif ! grep -q memscan "$tmp/out"; then ok "$what"
    else bad "$what" "$(grep memscan "$tmp/out" | head -3)"; fi
  done
  for mode in process thread; do
    th=(); [ $mode = thread ] && th=(--thread=1)
    LD_PRELOAD="$tmp/memscan.so" timeout 60 fio --name=s --ioengine=external:"$PWD/$B/libnvmeof_fio.so" \
      --filename="traddr=127.0.0.1 subnqn=nqn.x ns=1" --dhchap_secret_file="$tmp/k" \
      --dhchap_ctrl_secret_file="$tmp/k" "${th[@]}" --rw=read --size=1m > "$tmp/fio.out" 2> "$tmp/fio.err"
    if ! grep -q "nvmeof: connect to" "$tmp/fio.err"; then
      bad "no secret in the engine's memory after a connect ($mode)" "no connect failure: $(head -3 "$tmp/fio.err")"
    elif ! grep -q memscan "$tmp/fio.err"; then ok "no secret in the engine's memory after a connect ($mode)"
    else bad "no secret in the engine's memory after a connect ($mode)" "$(grep memscan "$tmp/fio.err" | head -3)"; fi
  done
fi

tally "secrets"
