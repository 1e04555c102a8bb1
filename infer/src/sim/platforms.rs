//! Named machines: the five platforms of the MCTOP paper (§2.1, latencies in cycles) and
//! modern or irregular ones (latencies in ns).
//!
//! Every builder returns a noise-free spec (add noise with [`MachineSpec::with_noise`]);
//! units and clock frequency are set. The paper's numbers come from its figures and
//! text (Ivy's table in §3, Westmere's Figure 2); the others are typical values of
//! core-to-core latency measurements on such machines.

use topoprobe_model::LatencyUnit;

use super::spec::{links_matrix, CrossSocket, MachineSpec, Numbering, Unit};

/// A socket of `cores` cores with `smt` contexts each, all at `latency` from each other.
fn flat_socket(cores: usize, smt: usize, smt_latency: f64, latency: f64) -> Unit {
    Unit::group(latency, Unit::cores(cores, smt, smt_latency))
}

/// Intel Xeon Ivy Bridge (2 × E5-2680 v2): 2 sockets × 10 cores × 2 SMT = 40 contexts,
/// 2.8 GHz, Linux numbering (socket 0 is contexts 0-9 and 20-29).
///
/// Cycles: SMT 28, in-socket 112, cross-socket 308.
#[must_use]
pub fn ivy() -> MachineSpec {
    MachineSpec::symmetric(
        "ivy",
        2,
        flat_socket(10, 2, 28.0, 112.0),
        CrossSocket::Uniform(308.0),
    )
    .with_numbering(Numbering::SiblingsFar)
    .with_units(LatencyUnit::Cycles, Some(2.8))
}

/// Direct links of the 8-socket Westmere: two fully connected quads (0-3 and 4-7), each
/// socket `i` of the first quad linked to `i + 4`, and two diagonals (0-5, 2-7); every
/// socket has 4 or 5 direct neighbours and every pair is at most two hops apart.
pub const WESTMERE_LINKS: [(usize, usize); 18] = [
    (0, 1),
    (0, 2),
    (0, 3),
    (1, 2),
    (1, 3),
    (2, 3),
    (4, 5),
    (4, 6),
    (4, 7),
    (5, 6),
    (5, 7),
    (6, 7),
    (0, 4),
    (1, 5),
    (2, 6),
    (3, 7),
    (0, 5),
    (2, 7),
];

/// Intel Xeon Westmere-EX (8 × E7-8867L): 8 sockets × 10 cores × 2 SMT = 160 contexts,
/// 2.1 GHz, Linux numbering.
///
/// Cycles: SMT 28, in-socket 116, cross-socket 341 between directly linked sockets
/// ([`WESTMERE_LINKS`]) and 445 two hops apart.
#[must_use]
pub fn westmere() -> MachineSpec {
    MachineSpec::symmetric(
        "westmere",
        8,
        flat_socket(10, 2, 28.0, 116.0),
        links_matrix(8, &WESTMERE_LINKS, &[341.0, 445.0]),
    )
    .with_numbering(Numbering::SiblingsFar)
    .with_units(LatencyUnit::Cycles, Some(2.1))
}

/// Intel Xeon Haswell (4 × E7-4830 v3): 4 sockets × 12 cores × 2 SMT = 96 contexts,
/// 2.7 GHz, fully connected, Linux numbering.
///
/// Cycles: SMT 30, in-socket 110, cross-socket 300.
#[must_use]
pub fn haswell() -> MachineSpec {
    MachineSpec::symmetric(
        "haswell",
        4,
        flat_socket(12, 2, 30.0, 110.0),
        CrossSocket::Uniform(300.0),
    )
    .with_numbering(Numbering::SiblingsFar)
    .with_units(LatencyUnit::Cycles, Some(2.7))
}

/// Direct links of the 4-package Magny-Cours: the two dies of a package (`2k`, `2k + 1`)
/// are linked, the even dies are fully connected, and so are the odd dies; every die has 4
/// direct neighbours and dies of different parity in different packages are two hops apart.
pub const OPTERON_LINKS: [(usize, usize); 16] = [
    (0, 1),
    (2, 3),
    (4, 5),
    (6, 7),
    (0, 2),
    (0, 4),
    (0, 6),
    (2, 4),
    (2, 6),
    (4, 6),
    (1, 3),
    (1, 5),
    (1, 7),
    (3, 5),
    (3, 7),
    (5, 7),
];

/// AMD Opteron (4 × Opteron 6172, two 6-core dies per package): 8 dies, counted as
/// sockets as the paper does, × 6 cores, no SMT = 48 contexts, 2.1 GHz.
///
/// Cycles: in-die 132, 280 between directly linked dies ([`OPTERON_LINKS`]), 380 two hops
/// apart.
#[must_use]
pub fn opteron() -> MachineSpec {
    MachineSpec::symmetric(
        "opteron",
        8,
        flat_socket(6, 1, 0.0, 132.0),
        links_matrix(8, &OPTERON_LINKS, &[280.0, 380.0]),
    )
    .with_numbering(Numbering::SiblingsFar)
    .with_units(LatencyUnit::Cycles, Some(2.1))
}

/// Oracle SPARC T4-4: 4 sockets × 8 cores × 8 SMT = 256 contexts, 3.0 GHz, fully connected,
/// Solaris numbering (the 8 strands of a core are consecutive).
///
/// Cycles: SMT 28, in-socket 110, cross-socket 350.
#[must_use]
pub fn sparc_t4() -> MachineSpec {
    MachineSpec::symmetric(
        "sparc-t4",
        4,
        flat_socket(8, 8, 28.0, 110.0),
        CrossSocket::Uniform(350.0),
    )
    .with_numbering(Numbering::SiblingsAdjacent)
    .with_units(LatencyUnit::Cycles, Some(3.0))
}

/// AMD EPYC Milan (2 × 7763): 2 sockets × 8 CCDs of one 8-core CCX × 2 SMT = 256 contexts,
/// 2.45 GHz, Linux numbering.
///
/// ns: SMT 8, in-CCX 25, between CCDs of a socket 120, cross-socket 230.
#[must_use]
pub fn epyc_2x64() -> MachineSpec {
    let ccx = Unit::group(25.0, Unit::cores(8, 2, 8.0));
    MachineSpec::symmetric(
        "epyc-2x64",
        2,
        Unit::group(120.0, vec![ccx; 8]),
        CrossSocket::Uniform(230.0),
    )
    .with_numbering(Numbering::SiblingsFar)
    .with_units(LatencyUnit::Ns, Some(2.45))
}

/// AMD EPYC Rome (2 × 7742) with the home-node effect: 2 sockets × 16 CCXs of 4 cores × 2
/// SMT = 256 contexts, 2.25 GHz, Linux numbering.
///
/// ns: SMT 8, in-CCX 25, between CCXs of socket 1 132, cross-socket 267; socket 0 is the
/// home node of the measurement's cache lines, so its cross-CCX pairs are as slow as the
/// cross-socket ones (267).
#[must_use]
pub fn epyc_2x64_home_node() -> MachineSpec {
    let ccx = Unit::group(25.0, Unit::cores(4, 2, 8.0));
    MachineSpec::symmetric(
        "epyc-2x64-home-node",
        2,
        Unit::group(132.0, vec![ccx; 16]),
        CrossSocket::Uniform(267.0),
    )
    .with_numbering(Numbering::SiblingsFar)
    .with_home_node(Some(0))
    .with_units(LatencyUnit::Ns, Some(2.25))
}

/// A hybrid desktop CPU like the Intel Core i9-12900K: 8 P-cores with 2 SMT contexts
/// (adjacent siblings, contexts 0-15) directly in the socket, then two clusters of 4
/// single-context E-cores (16-19 and 20-23) inside an "all E-cores" group; 24 contexts,
/// 3.2 GHz.
///
/// ns: SMT 4.3; 35 between neighbouring stops of the ring, growing with the distance
/// (gradient 0.3, up to about 45; the P-cores are one stop each, each E-cluster one stop),
/// which is what sets the P-cores apart from each other; 44 between the two E-clusters; 50
/// inside an E-cluster — higher than outside it (the E-core inversion). The cross-socket
/// latency is irrelevant (one socket).
#[must_use]
pub fn hybrid_desktop() -> MachineSpec {
    let cluster = Unit::group(50.0, vec![Unit::single_core(); 4]);
    let e_cores = Unit::group(44.0, vec![cluster.clone(), cluster]);
    let mut members = Unit::cores(8, 2, 4.3);
    members.push(e_cores);
    MachineSpec::new(
        "hybrid-desktop",
        vec![Unit::group(35.0, members)],
        CrossSocket::Uniform(35.0),
    )
    .with_numbering(Numbering::SiblingsAdjacent)
    .with_units(LatencyUnit::Ns, Some(3.2))
    .with_mesh(0.3)
}

/// One socket of `cores` single-context cores without cluster structure: 40 ns between
/// neighbours, growing with the distance along the mesh (gradient 0.5, up to about 60 ns);
/// 3.0 GHz. A matrix needs at least 2 cores.
#[must_use]
pub fn flat_mesh(cores: usize) -> MachineSpec {
    MachineSpec::new(
        format!("flat-mesh-{cores}"),
        vec![flat_socket(cores, 1, 0.0, 40.0)],
        CrossSocket::Uniform(40.0),
    )
    .with_mesh(0.5)
    .with_units(LatencyUnit::Ns, Some(3.0))
}

/// A two-socket Intel Xeon Skylake-SP (2 × Gold 6130): 2 sockets × 16 cores × 2 SMT = 64
/// contexts, 2.1 GHz, Linux numbering.
///
/// ns: SMT 7.4, in-socket 48 on a mesh (gradient 0.2: up to about 57), cross-socket 140.
#[must_use]
pub fn xeon_2s() -> MachineSpec {
    MachineSpec::symmetric(
        "xeon-2s",
        2,
        flat_socket(16, 2, 7.4, 48.0),
        CrossSocket::Uniform(140.0),
    )
    .with_numbering(Numbering::SiblingsFar)
    .with_mesh(0.2)
    .with_units(LatencyUnit::Ns, Some(2.1))
}

/// An Intel Xeon Phi Knights Landing (7210) seen as 32 tiles of 2 single-context cores
/// (64 contexts), 1.3 GHz.
///
/// ns: 42 inside a tile (shared L2), 90 across the mesh.
#[must_use]
pub fn knl_tiles() -> MachineSpec {
    let tile = Unit::group(42.0, vec![Unit::single_core(); 2]);
    MachineSpec::new(
        "knl-tiles",
        vec![Unit::group(90.0, vec![tile; 32])],
        CrossSocket::Uniform(90.0),
    )
    .with_units(LatencyUnit::Ns, Some(1.3))
}

/// An AMD FX-8300 (Piledriver, clustered multithreading): 4 modules of 2 single-context
/// cores (8 contexts), 3.3 GHz.
///
/// ns: 44 inside a module (shared L2), 270 between modules (through the L3 and the
/// northbridge).
#[must_use]
pub fn cmt_modules() -> MachineSpec {
    let module = Unit::group(44.0, vec![Unit::single_core(); 2]);
    MachineSpec::new(
        "cmt-modules",
        vec![Unit::group(270.0, vec![module; 4])],
        CrossSocket::Uniform(270.0),
    )
    .with_units(LatencyUnit::Ns, Some(3.3))
}

/// A two-socket server of `ccx` CCXs per socket, each of 8 SMT2 cores (`32 × ccx`
/// contexts), for scaling benchmarks: ns: SMT 8, in a CCX 25, between the CCXs of a socket
/// 120, between sockets 230; Linux numbering; 2.5 GHz.
#[must_use]
pub fn ccx_server(ccx: usize) -> MachineSpec {
    let group = Unit::group(25.0, Unit::cores(8, 2, 8.0));
    MachineSpec::symmetric(
        format!("ccx-2s-{ccx}x8x2"),
        2,
        Unit::group(120.0, vec![group; ccx]),
        CrossSocket::Uniform(230.0),
    )
    .with_numbering(Numbering::SiblingsFar)
    .with_units(LatencyUnit::Ns, Some(2.5))
}

/// A two-socket server of flat sockets of `cores` SMT2 cores on a mesh (`4 × cores`
/// contexts), for scaling benchmarks: ns: SMT 7.4, in a socket 48 with gradient 0.2,
/// between sockets 140; Linux numbering; 2.1 GHz.
#[must_use]
pub fn mesh_server(cores: usize) -> MachineSpec {
    MachineSpec::symmetric(
        format!("mesh-2s-{cores}x2"),
        2,
        Unit::group(48.0, Unit::cores(cores, 2, 7.4)),
        CrossSocket::Uniform(140.0),
    )
    .with_numbering(Numbering::SiblingsFar)
    .with_mesh(0.2)
    .with_units(LatencyUnit::Ns, Some(2.1))
}

/// A chiplet server like the AMD EPYC 7763 (Milan): `sockets` sockets of `ccds` CCDs of 8
/// SMT2 cores (`16 × ccds × sockets` contexts), Linux numbering, 2.45 GHz; 3% of the
/// blocks between a core and another CCD of its socket read at the cross-socket latency,
/// as a few percent of such a server's in-socket pairs do (add the home-node effect with
/// [`MachineSpec::with_home_node`]).
///
/// ns: SMT 10, in a CCD 25, between the CCDs of a socket 115, between sockets 300.
#[must_use]
pub fn chiplet_server(sockets: usize, ccds: usize) -> MachineSpec {
    let ccd = Unit::group(25.0, Unit::cores(8, 2, 10.0));
    MachineSpec::symmetric(
        format!("chiplet-{sockets}s-{ccds}x8x2"),
        sockets,
        Unit::group(115.0, vec![ccd; ccds]),
        CrossSocket::Uniform(300.0),
    )
    .with_numbering(Numbering::SiblingsFar)
    .with_slow_blocks(0.03)
    .with_units(LatencyUnit::Ns, Some(2.45))
}

/// A one-socket chiplet desktop like the AMD Threadripper 1950X whose second die has the
/// home-node effect: two dies of two 4-core SMT2 CCXs (32 contexts, siblings adjacent),
/// 3.4 GHz.
///
/// ns: SMT 10, in a CCX 26, between the CCXs of die 0 91, between the dies 154, between the
/// CCXs of die 1 157 (as slow as the link: its pairs go through the other die's memory).
#[must_use]
pub fn split_die_desktop() -> MachineSpec {
    let ccx = Unit::group(26.0, Unit::cores(4, 2, 10.0));
    let die0 = Unit::group(91.0, vec![ccx.clone(), ccx.clone()]);
    let die1 = Unit::group(157.0, vec![ccx.clone(), ccx]);
    MachineSpec::new(
        "split-die-desktop",
        vec![Unit::group(154.0, vec![die0, die1])],
        CrossSocket::Uniform(154.0),
    )
    .with_numbering(Numbering::SiblingsAdjacent)
    .with_units(LatencyUnit::Ns, Some(3.4))
}

/// An Apple-style laptop chip (M4 Pro-like): one die with a cluster of `e_cores` efficiency
/// cores and `p_clusters` clusters of `p_cores` performance cores, no SMT (E-cores first),
/// 4.0 GHz. Measured as macOS tools do: directed, each direction on its own (add
/// [`Noise::directed`](super::Noise::directed) noise).
///
/// ns: 26 inside the E-cluster, 39 inside a P-cluster, 100 between clusters.
#[must_use]
pub fn apple_pe(e_cores: usize, p_clusters: usize, p_cores: usize) -> MachineSpec {
    let mut members = vec![Unit::group(26.0, vec![Unit::single_core(); e_cores])];
    members.extend((0..p_clusters).map(|_| Unit::group(39.0, vec![Unit::single_core(); p_cores])));
    MachineSpec::new(
        format!("apple-{e_cores}e-{p_clusters}x{p_cores}p"),
        vec![Unit::group(100.0, members)],
        CrossSocket::Uniform(100.0),
    )
    .with_numbering(Numbering::SiblingsAdjacent)
    .with_units(LatencyUnit::Ns, Some(4.0))
}

/// A two-socket server with a fast socket link: 2 sockets of `cores` SMT2 cores on a mesh
/// (`4 × cores` contexts), Linux numbering, 2.6 GHz.
///
/// ns: SMT 8, in a socket 37 with gradient 0.15 (up to about 42), between sockets 74 — twice
/// the inside, below the 100 ns a socket link usually costs.
#[must_use]
pub fn fast_link_server(cores: usize) -> MachineSpec {
    MachineSpec::symmetric(
        format!("fast-link-2s-{cores}x2"),
        2,
        Unit::group(37.0, Unit::cores(cores, 2, 8.0)),
        CrossSocket::Uniform(74.0),
    )
    .with_numbering(Numbering::SiblingsFar)
    .with_mesh(0.15)
    .with_units(LatencyUnit::Ns, Some(2.6))
}

/// A one-socket chiplet CPU whose cluster level sits at the SMT bound (Threadripper
/// 3990X-like, one context per core measured): `ccxs` CCXs of 4 single-context cores, 2.9
/// GHz.
///
/// ns: 19.8 inside a CCX, 95 between CCXs with gradient 0.2 (up to about 114).
#[must_use]
pub fn clusters_at_smt_bound(ccxs: usize) -> MachineSpec {
    let ccx = Unit::group(19.8, vec![Unit::single_core(); 4]);
    MachineSpec::new(
        format!("ccx-at-bound-{ccxs}x4"),
        vec![Unit::group(95.0, vec![ccx; ccxs])],
        CrossSocket::Uniform(95.0),
    )
    .with_mesh(0.2)
    .with_units(LatencyUnit::Ns, Some(2.9))
}

/// A desktop CPU whose SMT siblings are barely faster than the other cores of their CCD
/// (Zen 5-like): two CCDs of 8 SMT2 cores (32 contexts, siblings `i` and `i + 16`), 4.3 GHz.
///
/// ns: SMT 17.5; 18 between the cores of a CCD, growing along its ring (gradient 0.5, up to
/// about 26): no latency gap sets the siblings apart, only their identical profiles; 80
/// between the CCDs.
#[must_use]
pub fn smt_on_a_ring() -> MachineSpec {
    let ccd = Unit::group(18.0, Unit::cores(8, 2, 17.5));
    MachineSpec::symmetric(
        "smt-on-a-ring",
        1,
        Unit::group(80.0, vec![ccd.clone(), ccd]),
        CrossSocket::Uniform(80.0),
    )
    .with_numbering(Numbering::SiblingsFar)
    .with_group_mesh(0.5)
    .with_units(LatencyUnit::Ns, Some(4.3))
}

/// A machine measured with a coarse timer (steps of 5 ns) that reads its SMT pairs as 0:
/// two dies of 4 SMT2 cores (16 contexts, siblings adjacent), 2.8 GHz.
///
/// ns: SMT 2 (below half a step: read as 0), 30 inside a die, 60 between the dies.
#[must_use]
pub fn coarse_timer_dies() -> MachineSpec {
    let die = Unit::group(30.0, Unit::cores(4, 2, 2.0));
    MachineSpec::new(
        "coarse-timer-dies",
        vec![Unit::group(60.0, vec![die.clone(), die])],
        CrossSocket::Uniform(60.0),
    )
    .with_numbering(Numbering::SiblingsAdjacent)
    .with_quantum(Some(5.0))
    .with_zeros(true)
    .with_units(LatencyUnit::Ns, Some(2.8))
}

/// A hybrid desktop CPU whose E-core clusters the latency barely shows (Raptor Lake-like):
/// 8 P-cores with 2 adjacent SMT contexts, then `e_clusters` clusters of 4 single-context
/// E-cores (`16 + 4 × e_clusters` contexts), 3.4 GHz.
///
/// ns: SMT 4.3; 35 between the stops of the ring (gradient 0.3); 47 inside an E-cluster and
/// 46.5 between the E-clusters: only the OS's L2-sharing lists tell the clusters apart.
#[must_use]
pub fn hybrid_faint_e_clusters(e_clusters: usize) -> MachineSpec {
    let cluster = Unit::group(47.0, vec![Unit::single_core(); 4]);
    let e_cores = Unit::group(46.5, vec![cluster; e_clusters]);
    let mut members = Unit::cores(8, 2, 4.3);
    members.push(e_cores);
    MachineSpec::new(
        format!("hybrid-faint-e-{e_clusters}x4"),
        vec![Unit::group(35.0, members)],
        CrossSocket::Uniform(35.0),
    )
    .with_numbering(Numbering::SiblingsAdjacent)
    .with_units(LatencyUnit::Ns, Some(3.4))
    .with_mesh(0.3)
}

/// Every named platform (with [`flat_mesh`] of 24 cores), noise-free.
#[must_use]
pub fn all() -> Vec<MachineSpec> {
    vec![
        ivy(),
        westmere(),
        haswell(),
        opteron(),
        sparc_t4(),
        epyc_2x64(),
        epyc_2x64_home_node(),
        hybrid_desktop(),
        flat_mesh(24),
        xeon_2s(),
        knl_tiles(),
        cmt_modules(),
    ]
}
