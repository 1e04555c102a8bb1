#!/usr/bin/env bash
# Runs topoprobe-cluster over several "hosts" on this one machine: each host is a network
# namespace (with its own host name) joined to the others by veth links through a bridge,
# and Open MPI's TCP transport carries the messages between hosts, through the kernel's
# network stack. The inter-node layer must then be found and labelled inter-node.
#
#   scripts/cluster-netns.sh [HOSTS [RANKS-PER-HOST [topoprobe-cluster options]]]
#
# Needs root (ip netns, unshare), Open MPI (scripts/setup.sh --with-mpi) and the program
# built: cargo build --release -p topoprobe-cluster --features mpi. Prints the report;
# the namespaces are removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

hosts=${1:-2}
per_host=${2:-2}
shift $(( $# < 2 ? $# : 2 ))
bin=${TOPOPROBE_CLUSTER:-$PWD/target/release/topoprobe-cluster}
[ -x "$bin" ] || { echo "cluster-netns: $bin not built (cargo build --release -p topoprobe-cluster --features mpi)" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "cluster-netns: mpirun not found (scripts/setup.sh --with-mpi)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "cluster-netns: needs root for network namespaces" >&2; exit 1; }

tag="tp$$"
work=$(mktemp -d)
bridge="${tag}br"
cleanup() {
    for i in $(seq 1 "$hosts"); do ip netns del "${tag}h$i" 2>/dev/null || true; done
    ip link del "$bridge" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# The bridge lives in the root namespace, where mpirun runs (10.77.0.254).
ip link add "$bridge" type bridge
ip addr add 10.77.0.254/24 dev "$bridge"
ip link set "$bridge" up
: > "$work/hostfile"
for i in $(seq 1 "$hosts"); do
    ns="${tag}h$i"
    ip netns add "$ns"
    ip link add "${tag}v$i" type veth peer name eth0 netns "$ns"
    ip link set "${tag}v$i" master "$bridge" up
    ip -n "$ns" addr add "10.77.0.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    echo "10.77.0.$i slots=$per_host" >> "$work/hostfile"
done

# Open MPI starts its daemon on a host through this agent instead of ssh: the host's
# namespace, with the host's own name (what every rank reports).
cat > "$work/agent" <<EOF
#!/usr/bin/env bash
host=\$1; shift
while [ "\${1:-}" = "-x" ] || [ "\${1#-}" != "\$1" ]; do shift; done
i=\${host##*.}
exec ip netns exec "${tag}h\$i" unshare --uts sh -c "hostname node\$i; exec \$*"
EOF
chmod +x "$work/agent"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun --oversubscribe --hostfile "$work/hostfile" -np $((hosts * per_host)) \
    --mca plm_rsh_agent "$work/agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca btl tcp,vader,self --mca btl_tcp_if_include 10.77.0.0/24 \
    --mca oob_tcp_if_include 10.77.0.0/24 \
    "$bin" "$@"
