#!/usr/bin/env bash
# Instructions per Run+Wait of a small message, counted by callgrind: a
# developer's probe for the software path (see bench/instr_pingpong.c).
#
#   bench/instr.sh PREFIX [BYTES] [ITERATIONS]      # default 8 bytes, 20000
#   GOAL_PROGRESS=thread bench/instr.sh PREFIX      # another progress mode
#
# Prints rank 0's instructions per iteration in all, in GOAL_Run and in
# GOAL_Wait, and its ten costliest functions (self cost, inlined callees
# included). Under valgrind (3.19 knows no pidfd_open) goal watches its
# peers through /proc and reserves a 256 MiB shared heap, by itself.
set -euo pipefail
prefix=${1:?usage: bench/instr.sh PREFIX [BYTES] [ITERATIONS]}
bytes=${2:-8}
n=${3:-20000}
here=$(cd "$(dirname "$0")" && pwd)
command -v valgrind >/dev/null || { echo "instr.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -I"$prefix/include" "$here/instr_pingpong.c" -o "$work/pp" -L"$prefix/lib" -lgoal -Wl,-rpath,"$prefix/lib"
cat > "$work/rank0.sh" <<WRAP
#!/usr/bin/env bash
if [ "\$GOAL_RANK" = 0 ]; then exec valgrind -q --tool=callgrind --callgrind-out-file="$work/cg.out" "\$@"; else exec "\$@"; fi
WRAP
chmod +x "$work/rank0.sh"
GOAL_PROGRESS=${GOAL_PROGRESS:-manual} \
    "$prefix/bin/goalrun" -n 2 "$work/rank0.sh" "$work/pp" "$n" "$bytes"
echo "rank 0, $bytes bytes, GOAL_PROGRESS=${GOAL_PROGRESS:-manual}, instructions per iteration:"
callgrind_annotate --inclusive=yes --threshold=100 "$work/cg.out" 2>/dev/null \
    | grep -E '\?\?\?:main |:GOAL_Run \[|:GOAL_Wait \[' \
    | awk -v n="$n" '{x=$1; gsub(",","",x); name=$3; sub(/.*:/,"",name); if (name ~ /^main/) name="in all"; printf "  %-10s %8.1f\n", name, x/n}'
echo "costliest functions (self, with what is inlined into them):"
callgrind_annotate --threshold=100 "$work/cg.out" 2>/dev/null | sed -n '/file:function/,/^-- Auto/p' \
    | grep -E '^\s*[0-9,]+ \(' \
    | python3 -c '
import collections, re, sys
n = int(sys.argv[1])
cost = collections.Counter()
for line in sys.stdin:
    m = re.match(r"\s*([0-9,]+) \(.*?\)\s+\S+?:(.*?)( \[.*)?$", line)
    if m:
        cost[m.group(2).strip()] += int(m.group(1).replace(",", ""))
for name, c in cost.most_common(10):
    print(f"  {c / n:8.1f}  {name[:100]}")
' "$n"
