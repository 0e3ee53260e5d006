# perf_top DATA [SYMBOLS] [TASKS]: a cpu-clock profile's top symbols (by
# task, library and symbol) and its share by task, blank-padded tails and
# perf's comment lines dropped: the form every profile in BENCHMARKS.md has.
perf_top() {
  perf report -i "$1" -g none --no-children --sort comm,dso,symbol --stdio 2> /dev/null \
    | grep -v '^#' | grep -E '^ +[0-9]' | sed 's/[ -]*$//' | head -"${2:-25}"
  echo "# by task"
  perf report -i "$1" -g none --no-children --sort comm --stdio 2> /dev/null \
    | grep -v '^#' | grep -E '^ +[0-9]' | sed 's/[ -]*$//' | head -"${3:-8}"
}
