#!/usr/bin/env bash
# Renders every shared latency matrix and libmctop file in every output format, so that two
# builds of topoprobe can be compared byte for byte (`diff -r`).
#
#   scripts/render-all.sh BINARY OUTDIR [DATA]
#
# DATA defaults to ../shared/data. Fields that record when and in how long a description
# was made (`created`, `duration_s`, the report's creation line) are blanked, since they
# differ between any two runs. Place, summaries and help texts are rendered too.
set -uo pipefail
bin=$(realpath "$1")
out=$2
data=${3:-"$(dirname "$0")/../../shared/data"}
mkdir -p "$out"
[ -d "$data/latency/matrices" ] || { echo "render-all: no shared data under $data" >&2; exit 1; }

# Blanks the fields that change from run to run.
normalize() {
  sed -E -e 's/"created": ?"[^"]*"/"created":""/g' \
         -e 's/"duration_s": ?[0-9.eE+-]+/"duration_s":0/g' \
         -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z/TIME/g' \
         -e 's/(duration[^0-9]*)[0-9]+\.[0-9]+ s/\1T s/g'
}

run() { # name, then the command's arguments
  local name=$1; shift
  "$bin" "$@" >"$out/$name.out" 2>"$out/$name.err"
  echo "exit $?" >>"$out/$name.err"
  normalize <"$out/$name.out" >"$out/$name.tmp" && mv "$out/$name.tmp" "$out/$name.out"
  normalize <"$out/$name.err" >"$out/$name.tmp" && mv "$out/$name.tmp" "$out/$name.err"
}

formats="text json tsv mct dot hwloc-xml"
inputs=()
for m in "$data"/latency/matrices/*.csv; do inputs+=("$m"); done
for m in "$data"/mct/*.mct; do inputs+=("$m"); done
for m in "$(dirname "$0")"/../data/examples/*.{csv,mct}; do [ -f "$m" ] && inputs+=("$m"); done

for f in "${inputs[@]}"; do
  id=$(basename "$f"); id=${id%.*}
  case "$f" in
    *.mct) from=(--from-mct "$f") ;;
    *) from=(--from-matrix "$f") ;;
  esac
  for fmt in $formats; do
    run "$id.infer.$fmt" infer "${from[@]}" --format "$fmt"
    run "$id.show.$fmt" show --topology "$f" --format "$fmt"
  done
  run "$id.show.text-v" show --topology "$f" -v
  run "$id.heatmap" heatmap --topology "$f"
  run "$id.report" report --topology "$f"
  for p in con_hwc rr_core balance_core power; do
    run "$id.place.$p" place --topology "$f" --policy "$p" -n 4 --format json
  done
done
for c in "" infer show matrix latency cache mem contention heatmap report place run power; do
  run "help.${c:-top}" $c --help
done
echo "render-all: $(ls "$out" | wc -l) files in $out"
