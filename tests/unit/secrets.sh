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

# holds BODY FILE: FILE holds 16 characters of BODY (from any 4th one).
# Read and matched in the shell: the sweeps below run the tool thousands of
# times, and a grep for each piece was most of their processes.
holds() {
  local body=$1 text="" i
  IFS= read -r -d '' text < "$2" || true
  for ((i = 0; i + 16 <= ${#body}; i += 4)); do
    [[ $text == *"${body:i:16}"* ]] && return 0
  done
  return 1
}
# never_shown NAME ARGS...: the tool fails, and nothing it prints holds the secret
never_shown() {
  local name=$1 rc=0; shift
  timeout 30 "$T" "$@" > "$tmp/out" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then bad "$name" "succeeded: $(head -2 "$tmp/out")"; return; fi
  if [ "$rc" = 124 ]; then bad "$name" "hung"; return; fi
  if holds "$BODY" "$tmp/out"; then bad "$name" "the secret in: $(head -3 "$tmp/out")"; return; fi
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

# the passthru subcommands: getopt's own "unrecognized option '--x=VALUE'"
# is off, values are never echoed, and they take the same secret options
never_shown "passthru --dhchap-secret= (an unknown option once)" io-passthru "${C[@]}" -O 0 --dhchap-secret="$KEY"
if grep -q "visible to other users" "$tmp/out"; then ok "io-passthru takes --dhchap-secret (and warns about it)"
else bad "io-passthru takes --dhchap-secret (and warns about it)" "$(head -3 "$tmp/out")"; fi
never_shown "passthru secret as a number" admin-passthru "${C[@]}" -O 6 -t "$KEY"
never_shown "passthru abbreviated --dhchap-s= (ambiguous)" io-passthru "${C[@]}" -O 0 --dhchap-s="$KEY"
never_shown "admin-passthru --dhchap-secret-file" admin-passthru "${C[@]}" -O 6 --dhchap-secret-file="$tmp/nofile"
never_shown "a secret as --dhchap-hashes" id-ctrl "${C[@]}" --dhchap-hashes="$KEY"
never_shown "a secret as --dhchap-dhgroups" id-ctrl "${C[@]}" --dhchap-dhgroups="sha256,$KEY"

# every subcommand, every option that takes a value, joined and apart, with
# a DH-HMAC-CHAP secret, a TLS PSK (NVMe/TCP's interchange format) and, where
# a value is short by nature, a secret's body alone: no message shows any of
# it (the tool's own, getopt's, or the library's)
TLSKEY="NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:"
leaks=0 runs=0
sweep_one() { # KEY-BODY ARGS...
  local body=$1; shift
  timeout 30 "$T" "$@" > "$tmp/out" 2>&1
  runs=$((runs + 1))
  if holds "$body" "$tmp/out"; then
    leaks=$((leaks + 1)); [ $leaks -le 5 ] && echo "  leak: ${*:1:2} ... ${*: -1:1}: $(head -2 "$tmp/out" | cut -c1-160)"
  fi
  return 0
}
# The sanitized build (its tool needs libasan, each run slower) sweeps a
# third: each option, with both secrets and both forms, on every third
# subcommand in turn, so every subcommand and every option runs sanitized
# (what ASan adds is the parsers' memory errors: their code is shared by
# the subcommands); the plain build sweeps every pair for the messages.
STRIDE=1
readelf -d "$T" | grep -q 'NEEDED.*libasan' && STRIDE=3
# one subcommand of each kind of option set (the others share a parser and
# a set with one of these)
SUBS=(discover id-ctrl id-ns smart-log get-log read write-zeroes list-rdma io-passthru admin-passthru
      gen-tls-key check-tls-key)
VOPTS=(-a -s -w -q -I -n -t -o -N -e -i -l -L -B -c -d -g -O -f -2 -4 -9 -M --lsp --timeout --transport --hostid
       --sysfs --dhchap-hashes --dhchap-dhgroups --dhchap-secret-file --dhchap-ctrl-secret-file --tls-key --tls-key-file --tcp-priority
       --tcp-tos --tcp-busy-poll --tcp-zerocopy --opcode --flags --namespace-id --data-len --input-file --cdw10
       --output-format --log-id --log-len --start-block --block-count --data --gpu --metadata
       -m -k --secret --keydata --hmac --hostnqn --subsysnqn --identity --keyring --keytype)
SHORTV=(-s -t -o -N -e -i -l -L -B -c -O -f -4 -m -I --hmac --identity --secret --lsp --timeout --tcp-tos --tcp-busy-poll --tcp-zerocopy --flags
        --dhchap-hashes --dhchap-dhgroups --data-len --output-format)
for si in "${!SUBS[@]}"; do
  sub=${SUBS[si]}
  P=(); case $sub in *-passthru) P=(-O 6);; check-tls-key) P=(-d "$TLSKEY");; esac
  CO=("${C[@]}"); case $sub in *-tls-key) CO=(-n nqn.2026-12.io.example:host);; esac
  for k in "$KEY" "$TLSKEY"; do
    b=${k#*:*:}; b=${b%:}
    for oi in "${!VOPTS[@]}"; do
      (((si + oi) % STRIDE == 0)) || continue
      o=${VOPTS[oi]}
      if [ "${o:0:2}" = -- ]; then j="$o=$k"; else j="$o$k"; fi
      sweep_one "$b" "$sub" "${CO[@]}" "${P[@]}" "$o" "$k"
      sweep_one "$b" "$sub" "${CO[@]}" "${P[@]}" "$j"
    done
  done
  bare=${KEY:10:48}
  for oi in "${!SHORTV[@]}"; do
    (((si + oi) % STRIDE == 0)) || continue
    sweep_one "$bare" "$sub" "${CO[@]}" "${P[@]}" "${SHORTV[oi]}" "$bare"
  done
done
if [ $leaks = 0 ]; then ok "no secret in $runs runs: every subcommand, option and form"
else bad "no secret in every subcommand, option and form" "$leaks of $runs runs showed one"; fi

# the engine: every option that takes a value and every filename key; fio's
# own lines ("fio: failed parsing ...") are fio's and left out
PREE=()
readelf -d "$PWD/$B/libnvmeof_fio.so" | grep -q 'NEEDED.*libasan' &&
  PREE=(env LD_PRELOAD="$(${CC:-cc} -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0)
eleaks=0 eruns=0
eng_one() { # BODY fio-args...
  local body=$1; shift
  timeout 60 "${PREE[@]}" fio --name=s --ioengine=external:"$PWD/$B/libnvmeof_fio.so" --rw=read --size=1m "$@" \
    2>&1 | grep -v '^fio: ' > "$tmp/eng.out"
  eruns=$((eruns + 1))
  if holds "$body" "$tmp/eng.out"; then
    eleaks=$((eleaks + 1)); [ $eleaks -le 5 ] && echo "  engine leak: ${*: -1:1}: $(head -2 "$tmp/eng.out" | cut -c1-160)"
  fi
  return 0
}
EF="traddr=127.0.0.1 subnqn=nqn.x ns=1"
for o in cmd_timeout comp_vector connect_retries connect_timeout ctrl_loss_tmo dhchap_ctrl_secret_file \
         dhchap_dhgroups dhchap_hashes dhchap_secret_file gpu hca hostid hostnqn iopolicy kato num_io_queues \
         numa_node path_loss qd_limit qpair_select qpairs qpairs_shared quiesce_time reconnect_delay spin_us src_addr \
         tcp_busy_poll tcp_priority tcp_tos tcp_zerocopy trtype tls_key tls_key_file; do
  for k in "$KEY" "$TLSKEY"; do b=${k#*:*:}; eng_one "${b%:}" --filename="$EF" --$o="$k"; done
done
for key in traddr trsvcid subnqn hostnqn srcaddr ns trtype adrfam; do
  f=$(sed "s/\b$key=[^ ]*//" <<< "$EF")
  eng_one "$BODY" --filename="$f $key=${KEY//:/\\:}"
done
if [ $eleaks = 0 ]; then ok "no secret in the engine's messages in $eruns runs: every option and filename key"
else bad "no secret in the engine's messages, every option and filename key" "$eleaks of $eruns runs showed one"; fi

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

# the TLS PSK: the same rules as the DH-HMAC-CHAP secrets
TLSBODY=${TLSKEY#*:*:}; TLSBODY=${TLSBODY%:}
tls_never_shown() { # NAME ARGS...: as never_shown, for the TLS key
  local name=$1 rc=0; shift
  timeout 30 "$T" "$@" > "$tmp/out" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then bad "$name" "succeeded: $(head -2 "$tmp/out")"; return; fi
  if [ "$rc" = 124 ]; then bad "$name" "hung"; return; fi
  if holds "$TLSBODY" "$tmp/out"; then bad "$name" "the key in: $(head -3 "$tmp/out")"; return; fi
  ok "$name: $(grep -v warning "$tmp/out" | head -1 | cut -c1-110)"
}
T2=(-t tcp -a 127.0.0.1 -s 1 -n nqn.2026-12.io.example:none --timeout=2000)
tls_never_shown "--tls-key over RDMA" id-ctrl "${C[@]}" --tls-key "$TLSKEY"
tls_never_shown "--tls-key, mistyped (CRC)" id-ctrl "${T2[@]}" --tls-key "${TLSKEY%?????}AAAA:"
tls_never_shown "--tls-key with nobody there" id-ctrl "${T2[@]}" --tls-key "$TLSKEY"
if grep -q "visible to other users" "$tmp/out"; then ok "a TLS key on the command line draws a warning"
else bad "a TLS key on the command line draws a warning" "$(head -3 "$tmp/out")"; fi
printf '%s\n' "$TLSKEY" > "$tmp/tk"
chmod 644 "$tmp/tk"
tls_never_shown "--tls-key-file, 0644" id-ctrl "${T2[@]}" --tls-key-file="$tmp/tk"
if grep -q "readable by group or others" "$tmp/out"; then ok "a 0644 TLS key file draws a warning"
else bad "a 0644 TLS key file draws a warning" "$(head -3 "$tmp/out")"; fi
tls_never_shown "both --tls-key and --tls-key-file" id-ctrl "${T2[@]}" --tls-key "$TLSKEY" --tls-key-file="$tmp/tk"
if grep -q "not both" "$tmp/out"; then ok "both TLS key forms are refused"; else bad "both TLS key forms are refused" "$(cat "$tmp/out")"; fi
tls_never_shown "a TLS key given as the DH-HMAC-CHAP secret" id-ctrl "${T2[@]}" -S "$TLSKEY"
tls_never_shown "a DH-HMAC-CHAP secret given as the TLS key" id-ctrl "${T2[@]}" --tls-key "$KEY"
if ! holds "$BODY" "$tmp/out"; then ok "  ... and the DH-HMAC-CHAP secret is not shown either"
else bad "a DH-HMAC-CHAP secret given as the TLS key" "shown: $(head -2 "$tmp/out")"; fi

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
    elif ! grep -q "memscan: scanned [1-9][0-9]* bytes" "$tmp/out"; then bad "$what" "the scan did not run: $(head -3 "$tmp/out")"
    elif ! grep -q "memscan: a " "$tmp/out"; then ok "$what ($(grep -o 'scanned [0-9]* bytes' "$tmp/out"))"
    else bad "$what" "$(grep memscan "$tmp/out" | head -3)"; fi
  done
  for mode in process thread; do
    th=(); [ $mode = thread ] && th=(--thread=1)
    LD_PRELOAD="$tmp/memscan.so" timeout 60 fio --name=s --ioengine=external:"$PWD/$B/libnvmeof_fio.so" \
      --filename="traddr=127.0.0.1 subnqn=nqn.x ns=1" --dhchap_secret_file="$tmp/k" \
      --dhchap_ctrl_secret_file="$tmp/k" "${th[@]}" --rw=read --size=1m > "$tmp/fio.out" 2> "$tmp/fio.err"
    if ! grep -q "nvmeof: connect to" "$tmp/fio.err"; then
      bad "no secret in the engine's memory after a connect ($mode)" "no connect failure: $(head -3 "$tmp/fio.err")"
    elif ! grep -q "memscan: scanned [1-9][0-9]* bytes" "$tmp/fio.err"; then
      bad "no secret in the engine's memory after a connect ($mode)" "the scan did not run: $(head -3 "$tmp/fio.err")"
    elif ! grep -q "memscan: a " "$tmp/fio.err"; then
      ok "no secret in the engine's memory after a connect ($mode, $(grep -o 'scanned [0-9]* bytes' "$tmp/fio.err"))"
    else bad "no secret in the engine's memory after a connect ($mode)" "$(grep memscan "$tmp/fio.err" | head -3)"; fi
  done
fi

tally "secrets"
