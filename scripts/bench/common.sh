# Shared by the acceptance scripts of scripts/bench: the binary, the log file and a header
# that says which machine, which commit and how loaded the machine was.
#   source scripts/bench/common.sh NAME   -> sets TP, LOG; prints the header into LOG
# machine-check.sh, the one-command check for a larger machine (docs/BENCHMARKS.md), does not
# source it: it builds nothing and writes everything, the same header included, under its OUTDIR.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
NAME=$1
TP=${TP:-${CARGO_TARGET_DIR:-target}/release/topoprobe}
[ -x "$TP" ] || cargo build --release --locked -q -p topoprobe-cli
mkdir -p docs/bench
LOG=${LOG:-docs/bench/$NAME-$(date +%F).log}
cpu_line() {
    local name family model
    name=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
    family=$(lscpu | sed -n 's/^CPU family: *//p' | head -1)
    model=$(lscpu | sed -n 's/^Model: *//p' | head -1)
    echo "$name (family $family, model $model), $(nproc) CPUs, $(lscpu | sed -n 's/^Hypervisor vendor: *//p') $(uname -r)"
}
{
    echo "# $NAME: $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes')"
    echo "# machine: $(cpu_line)"
    echo "# load before: $(uptime)"
} | tee "$LOG"
log() { echo "$*" | tee -a "$LOG"; }
finish() { log "# load after: $(uptime)"; }
