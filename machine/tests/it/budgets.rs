//! Every probe planned (not run) for machines from 2 to 4096 contexts, 1 to 32 memory nodes
//! and last-level caches up to 1.1 GiB per socket: the simulator's 512- and 4096-context
//! servers, OS views built here (8 nodes per socket, 1.1 GiB L3), and every sysfs capture
//! of `measure/tests/data/sysfs` (4 NUMA nodes on 2 packages, 128 ARM cores, a hybrid, …).
//! Each plan must keep within its budget: `topoprobe infer` 10 s (60 s with every plugin)
//! and 256 MiB of buffers, each measuring command 15 s and 512 MiB; what a budget leaves
//! out must be said.

use crate::common;

use common::{captures, unpack};

use topoprobe_infer::sim::platforms::{chiplet_server, mesh_server};
use topoprobe_infer::sim::MachineSpec;
use topoprobe_machine::pairs::{Repetitions, Sampling};
use topoprobe_machine::plan::{default_budget, plan_measurement, plan_pairs};
use topoprobe_machine::plugins::{self, in_order, plan_plugin, Plugin};
use topoprobe_machine::MachineError;
use topoprobe_measure::cache::{self, CacheOptions};
use topoprobe_measure::memory::{self, plan::plan_memory, MemOptions};
use topoprobe_measure::plan::{Shape, GIB, MIB, PROCESS_BYTES};
use topoprobe_measure::power::{plan_power, PowerOptions};
use topoprobe_model::{Budget, CacheType, CostPlan, OsCache, OsCpu, OsNode, OsView};

/// The budget of a measuring command.
const COMMAND: Budget = Budget::new(15.0, 512 * MIB);

/// A machine to plan for: its name, its OS view and its shape.
struct Machine {
    name: String,
    os: OsView,
}

impl Machine {
    fn shape(&self) -> Shape {
        Shape {
            can_flush: true,
            huge_pages: true,
            free_bytes: Some(64 * GIB),
            power_unavailable: None,
            ..Shape::from_os(&self.os, &[])
        }
    }
}

/// An OS view of `sockets` (each a list of cores, each a list of CPUs), `nodes` memory
/// nodes per socket (CPUs split evenly), an L3 of `llc` bytes per socket (split into
/// `llc_parts` instances), 48 KiB L1d and 2 MiB L2 per core; node distances 10 inside a
/// node, 12 between the nodes of a socket, 32 across sockets.
fn os_view(sockets: &[Vec<Vec<u32>>], nodes: usize, llc: u64, llc_parts: usize) -> OsView {
    let mut cpus = Vec::new();
    let mut caches = Vec::new();
    let mut node_list: Vec<OsNode> = Vec::new();
    let mut core_id = 0i64;
    for (s, cores) in sockets.iter().enumerate() {
        let all: Vec<u32> = cores.iter().flatten().copied().collect();
        for core in cores {
            let mut siblings = core.clone();
            siblings.sort_unstable();
            for &c in core {
                cpus.push(OsCpu {
                    id: c,
                    package: s as i64,
                    die: None,
                    core: core_id,
                    cluster: None,
                    thread_siblings: siblings.clone(),
                    core_siblings: all.clone(),
                    node: None,
                    capacity: None,
                    base_freq_khz: None,
                    max_freq_khz: None,
                    kind: None,
                });
            }
            core_id += 1;
            for (level, kind, size) in [
                (1, CacheType::Data, 48 << 10),
                (1, CacheType::Instruction, 32 << 10),
                (2, CacheType::Unified, 2 * MIB),
            ] {
                caches.push(OsCache {
                    level,
                    kind,
                    size_bytes: Some(size),
                    line_size: Some(64),
                    ways: None,
                    cpus: siblings.clone(),
                });
            }
        }
        let per_part = all.len().div_ceil(llc_parts);
        for part in all.chunks(per_part.max(1)) {
            let mut members = part.to_vec();
            members.sort_unstable();
            caches.push(OsCache {
                level: 3,
                kind: CacheType::Unified,
                size_bytes: Some(llc / llc_parts as u64),
                line_size: Some(64),
                ways: None,
                cpus: members,
            });
        }
        let per_node = all.len().div_ceil(nodes);
        for part in all.chunks(per_node.max(1)) {
            let mut members = part.to_vec();
            members.sort_unstable();
            node_list.push(OsNode {
                id: node_list.len() as u32,
                cpus: members,
                distances: Vec::new(),
                memory_bytes: Some(64 * GIB),
            });
        }
    }
    let total = node_list.len();
    for (i, node) in node_list.iter_mut().enumerate() {
        node.distances = (0..total)
            .map(|j| {
                if i == j {
                    10
                } else if i / nodes == j / nodes {
                    12
                } else {
                    32
                }
            })
            .collect();
    }
    for c in &mut cpus {
        c.node = node_list
            .iter()
            .find(|n| n.cpus.contains(&c.id))
            .map(|n| n.id);
    }
    cpus.sort_by_key(|c| c.id);
    OsView {
        cpus,
        nodes: Some(node_list),
        caches,
        ..OsView::default()
    }
}

/// A simulated machine's sockets and cores (context ids as CPU numbers).
fn sim_sockets(spec: &MachineSpec) -> Vec<Vec<Vec<u32>>> {
    let truth = spec.truth();
    let mut sockets: Vec<Vec<Vec<u32>>> = vec![Vec::new(); truth.num_sockets()];
    for core in truth.core_sets() {
        let s = truth.socket[core[0]];
        sockets[s].push(core.iter().map(|&c| c as u32).collect());
    }
    sockets
}

/// `sockets` sockets of `cores` cores of `smt` contexts, CPUs numbered like Linux (every
/// core's first context first).
fn regular(sockets: usize, cores: usize, smt: usize) -> Vec<Vec<Vec<u32>>> {
    let all_cores = sockets * cores;
    (0..sockets)
        .map(|s| {
            (0..cores)
                .map(|c| {
                    (0..smt)
                        .map(|t| (t * all_cores + s * cores + c) as u32)
                        .collect()
                })
                .collect()
        })
        .collect()
}

/// The OS views of the sysfs captures.
fn capture_views() -> Vec<Machine> {
    captures()
        .into_iter()
        .map(|name| {
            let (_dir, root) = unpack(&name);
            let os = topoprobe_measure::os::read_os_view(&root)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            Machine { name, os }
        })
        .collect()
}

/// Every machine the plans are checked on.
fn machines() -> Vec<Machine> {
    let mut v = vec![
        Machine {
            name: "2 contexts, 32 MiB L3".into(),
            os: os_view(&regular(1, 2, 1), 1, 32 * MIB, 1),
        },
        Machine {
            name: "16 vCPUs, 300 MiB L3".into(),
            os: os_view(&regular(1, 16, 1), 1, 300 * MIB, 1),
        },
        Machine {
            name: "simulated chiplet server, 512 contexts".into(),
            os: os_view(&sim_sockets(&chiplet_server(2, 16)), 4, 512 * MIB, 16),
        },
        Machine {
            name: "simulated mesh server, 4096 contexts".into(),
            os: os_view(&sim_sockets(&mesh_server(1024)), 1, 1100 * MIB, 1),
        },
        Machine {
            name: "simulated chiplet server, 8 sockets, 4096 contexts, 32 nodes".into(),
            os: os_view(&sim_sockets(&chiplet_server(8, 32)), 4, 1100 * MIB, 32),
        },
        Machine {
            name: "2 sockets × 128 cores × 2, 8 nodes per socket, 1.1 GiB L3".into(),
            os: os_view(&regular(2, 128, 2), 8, 1100 * MIB, 1),
        },
        Machine {
            name: "8 sockets × 256 cores × 2, 4 nodes per socket, 1.1 GiB L3".into(),
            os: os_view(&regular(8, 256, 2), 4, 1100 * MIB, 8),
        },
    ];
    v.extend(capture_views());
    v
}

/// The steps of `plan` that run probes (the inference's tables are planned apart).
fn probe_bytes(plan: &CostPlan) -> u64 {
    plan.steps
        .iter()
        .filter(|s| s.probe != "inference")
        .map(|s| s.bytes)
        .max()
        .unwrap_or(0)
}

/// Checks that `plan` keeps within `budget` (seconds; bytes of the probes' buffers and
/// the process besides).
fn within(plan: &CostPlan, budget: Budget, what: &str) {
    assert!(
        plan.seconds() <= budget.seconds,
        "{what}: {:.1} s planned, over {} s:\n{}",
        plan.seconds(),
        budget.seconds,
        topoprobe_view::cost::render(plan)
    );
    assert!(
        probe_bytes(plan) + PROCESS_BYTES <= budget.bytes,
        "{what}: {} bytes planned, over {}:\n{}",
        probe_bytes(plan),
        budget.bytes,
        topoprobe_view::cost::render(plan)
    );
}

#[test]
fn infer_keeps_within_its_budget_on_every_machine() {
    for m in machines() {
        let shape = m.shape();
        for list in [plugins::DEFAULT, "all", "mem-full,c2c"] {
            let wanted = in_order(&plugins::parse(list).unwrap());
            let budget = default_budget(&wanted);
            let plan = plan_measurement(
                &shape,
                Some(&m.os),
                &wanted,
                Sampling::default(),
                Repetitions::default(),
                budget,
                true,
            )
            .unwrap_or_else(|e| panic!("{}: {e}", m.name));
            within(&plan.cost, budget, &format!("{}, --plugins {list}", m.name));
            // The default plugins still measure caches and memory latency and bandwidth.
            let has = |what: &str| plan.cost.steps.iter().any(|s| s.what.contains(what));
            if list == "mem-full,c2c" {
                assert!(has("loaded latency CPU"), "{}: no loaded latency", m.name);
                let c2c = plan.cost.steps.iter().filter(|s| s.probe == "c2c").count();
                assert!(c2c > 0, "{}: no cache-to-cache transfer planned", m.name);
                continue;
            }
            if list == "all" {
                assert!(
                    plan.cost.steps.iter().any(|s| s.probe == "c2c"),
                    "{}: no cache-to-cache transfer in --plugins all",
                    m.name
                );
            }
            assert!(has("caches: walk"), "{}: no cache walk", m.name);
            assert!(has("latency CPU"), "{}: no memory latency", m.name);
            assert!(has("bandwidth socket"), "{}: no memory bandwidth", m.name);
            // The latency pairs are planned, and capped only where they must be.
            let pairs = &plan.pairs;
            if shape.contexts() <= 64 {
                assert!(
                    !pairs.quick && pairs.max_measurements.is_none(),
                    "{}",
                    m.name
                );
            }
            if pairs.max_measurements.is_some() || pairs.quick {
                assert!(!pairs.notes.is_empty(), "{}: a silent cut", m.name);
            }
            // The tables of a large machine are said when over the memory budget.
            let tables = plan
                .cost
                .steps
                .iter()
                .find(|s| s.probe == "inference")
                .map_or(0, |s| s.bytes);
            if tables + PROCESS_BYTES > budget.bytes {
                assert!(
                    plan.cost
                        .left_out
                        .iter()
                        .any(|n| n.contains("latency tables")),
                    "{}",
                    m.name
                );
            }
        }
    }
}

#[test]
fn each_measuring_command_keeps_within_fifteen_seconds_and_512_mib() {
    for m in machines() {
        let shape = m.shape();
        let mem = plan_memory(
            &shape,
            &MemOptions {
                budget: COMMAND,
                ..MemOptions::default()
            },
        );
        within(&mem.cost(), COMMAND, &format!("{}: mem", m.name));
        assert!(mem.pairs.0 >= 1);
        if mem.pairs.0 < mem.pairs.1 {
            assert!(
                mem.notes.iter().any(|n| n.contains("distance class")),
                "{}: {:?}",
                m.name,
                mem.notes
            );
        }
        let c = cache::plan_caches(
            &shape.cache_levels,
            true,
            &CacheOptions {
                budget: COMMAND,
                ..CacheOptions::default()
            },
        );
        within(&c.cost(), COMMAND, &format!("{}: cache", m.name));
        let power = plan_power(&shape, &PowerOptions::default(), COMMAND);
        within(&power.cost(), COMMAND, &format!("{}: power", m.name));
        for p in [Plugin::Contention, Plugin::SharedCaches] {
            let plan = plan_plugin(p, &shape, None, Some(&m.os), COMMAND);
            within(&plan, COMMAND, &format!("{}: {}", m.name, p.name()));
        }
        let pairs = plan_pairs(
            shape.contexts(),
            Sampling::default(),
            Repetitions::default(),
            COMMAND.seconds,
        )
        .unwrap_or_else(|e| panic!("{}: matrix: {e}", m.name));
        assert!(pairs.seconds <= COMMAND.seconds, "{}: matrix", m.name);
    }
}

#[test]
fn the_memory_plan_measures_one_pair_per_distance_class_first() {
    // 2 sockets × 8 nodes: distances 10, 12 and 32.
    let os = os_view(&regular(2, 128, 2), 8, 1100 * MIB, 1);
    let shape = Machine {
        name: String::new(),
        os: os.clone(),
    }
    .shape();
    let plan = plan_memory(
        &shape,
        &MemOptions {
            budget: Budget::new(3.0, 256 * MIB),
            ..MemOptions::default()
        },
    );
    let (measured, total) = plan.pairs;
    assert_eq!(total, 32);
    assert!(measured < total && measured >= 3, "{measured} of {total}");
    let note = plan.notes.join("\n");
    assert!(note.contains("(10, 12, 32)"), "{note}");
    // The first three latencies are one of each class.
    let first: Vec<(usize, u32)> = plan
        .steps
        .iter()
        .filter_map(|s| match s.work {
            memory::plan::MemWork::Latency { socket, node, .. } => Some((socket, node)),
            _ => None,
        })
        .take(3)
        .collect();
    let classes: Vec<u32> = first
        .iter()
        .map(|&(s, n)| shape.distance(s, n as usize))
        .collect();
    assert_eq!(classes, [10, 12, 32], "{first:?}");
    // With a 1.1 GiB L3, writes cannot be measured with regular stores in 512 MiB.
    assert!(plan.non_temporal);
    assert!(plan.bandwidth_bytes + PROCESS_BYTES <= 256 * MIB);
}

#[test]
fn every_pair_of_a_big_machine_is_refused_with_the_budget_that_would_fit() {
    let e = plan_pairs(
        4096,
        Sampling {
            full: true,
            seed: None,
        },
        Repetitions::default(),
        15.0,
    )
    .unwrap_err();
    let MachineError::OverBudget(message) = e else {
        panic!("{e}");
    };
    assert!(message.contains("--budget"), "{message}");
    // A small machine's every pair fits.
    let small = plan_pairs(
        16,
        Sampling {
            full: true,
            seed: None,
        },
        Repetitions::default(),
        15.0,
    )
    .unwrap();
    assert_eq!(small.measurements, 120);
    assert!(small.max_measurements.is_none() && !small.quick);
}

/// The `--full` plan of `shape` within `budget`.
fn full_plan(shape: &Shape, budget: Budget) -> memory::plan::MemPlan {
    plan_memory(
        shape,
        &MemOptions {
            budget,
            full: true,
            ..MemOptions::default()
        },
    )
}

#[test]
fn mem_full_keeps_within_its_budget_and_the_default_run_plans_none_of_it() {
    use memory::full_plan::FULL_BUDGET;
    use memory::plan::MemWork;
    for m in machines() {
        let shape = m.shape();
        let full = full_plan(&shape, FULL_BUDGET);
        within(
            &full.cost(),
            FULL_BUDGET,
            &format!("{}: mem --full", m.name),
        );
        let has = |f: &dyn Fn(&MemWork) -> bool| full.steps.iter().any(|s| f(&s.work));
        assert!(
            has(&|w| matches!(w, MemWork::Loaded { local: true, .. })),
            "{}: no loaded latency",
            m.name
        );
        assert!(
            has(&|w| matches!(w, MemWork::MatrixLatency { .. })),
            "{}",
            m.name
        );
        // Every matrix pair left out is said.
        if full.matrix_pairs.0 < full.matrix_pairs.1 {
            assert!(
                full.notes
                    .iter()
                    .any(|n| n.contains("node × node matrices")),
                "{}: {:?}",
                m.name,
                full.notes
            );
        }
        // The default run keeps today's steps only.
        let default = plan_memory(
            &shape,
            &MemOptions {
                budget: COMMAND,
                ..MemOptions::default()
            },
        );
        assert!(default
            .steps
            .iter()
            .all(|s| matches!(s.work, MemWork::Latency { .. } | MemWork::Bandwidth { .. })));
        assert!(default.initiators.is_empty());
        // A tight budget plans less, never more time or memory than it has.
        let tight = Budget::new(5.0, 256 * MIB);
        within(
            &full_plan(&shape, tight).cost(),
            tight,
            &format!("{}: tight", m.name),
        );
    }
}

#[test]
fn the_matrix_of_8_sockets_and_32_nodes_starts_with_every_distance_class() {
    use memory::plan::MemWork;
    let os = os_view(&regular(8, 64, 2), 4, 1100 * MIB, 8);
    let shape = Machine {
        name: String::new(),
        os,
    }
    .shape();
    let plan = full_plan(&shape, memory::full_plan::FULL_BUDGET);
    // One initiator per node with CPUs: 32 of them, each with its node's 32 contexts.
    assert_eq!(plan.initiators.len(), 32);
    assert!(plan.initiators.iter().all(|i| i.cpus.len() == 32));
    assert_eq!(plan.targets.len(), 32);
    assert_eq!(plan.matrix_pairs.1, 32 * 32);
    assert!(plan.matrix_pairs.0 < plan.matrix_pairs.1);
    let cells: Vec<(usize, u32)> = plan
        .steps
        .iter()
        .filter_map(|s| match s.work {
            MemWork::MatrixLatency {
                initiator, node, ..
            } => Some((initiator, node)),
            _ => None,
        })
        .collect();
    assert!(cells.len() >= 3, "{cells:?}");
    let classes: Vec<u32> = cells[..3]
        .iter()
        .map(|&(i, n)| memory::matrix::distance(&shape, &plan.initiators[i], n))
        .collect();
    assert_eq!(classes, [10, 12, 32]);
    // Then each initiator's own node.
    assert!(cells[3..]
        .iter()
        .take(29)
        .all(|&(i, n)| plan.initiators[i].node == Some(n)));
    let note = plan.notes.join("\n");
    assert!(
        note.contains(&format!("latency of {} ", plan.matrix_pairs.0)),
        "{note}"
    );
    assert!(
        note.contains("of 1024 pairs (32 initiators × 32 target nodes)"),
        "{note}"
    );
    // Loaded latency: each socket's local node, then one remote class.
    let sweeps: Vec<(usize, bool)> = plan
        .steps
        .iter()
        .filter_map(|s| match s.work {
            MemWork::Loaded { socket, local, .. } => Some((socket, local)),
            _ => None,
        })
        .collect();
    assert!(
        sweeps.iter().any(|&(_, local)| !local) || sweeps.len() < 16,
        "{sweeps:?}"
    );
}

#[test]
fn memory_only_nodes_are_targets_never_initiators() {
    use memory::plan::MemWork;
    // 2 sockets × 1 node, and 2 CXL nodes without CPUs (distance 20 from socket 0's node,
    // 30 from socket 1's).
    let mut os = os_view(&regular(2, 8, 2), 1, 64 * MIB, 1);
    let nodes = os.nodes.as_mut().unwrap();
    for n in nodes.iter_mut() {
        let far = if n.id == 0 { [20, 30] } else { [30, 20] };
        n.distances.extend(far);
    }
    for id in [2u32, 3] {
        nodes.push(OsNode {
            id,
            cpus: Vec::new(),
            distances: if id == 2 {
                vec![20, 30, 10, 40]
            } else {
                vec![30, 20, 40, 10]
            },
            memory_bytes: Some(256 * GIB),
        });
    }
    let shape = Machine {
        name: String::new(),
        os,
    }
    .shape();
    let plan = full_plan(&shape, memory::full_plan::FULL_BUDGET);
    let names: Vec<&str> = plan.initiators.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["node 0", "node 1"]);
    assert_eq!(plan.targets, [0, 1, 2, 3]);
    // Every pair fits 120 s on this small machine.
    assert_eq!(plan.matrix_pairs, (8, 8));
    let cxl_cells = plan
        .steps
        .iter()
        .filter(|s| {
            matches!(s.work, MemWork::MatrixLatency { node, .. } | MemWork::MatrixRead { node, .. } if node >= 2)
        })
        .count();
    assert_eq!(cxl_cells, 8);
    // The remote sweep of socket 0 goes to its nearest other node, the CXL node 2 at 20.
    assert!(plan.steps.iter().any(|s| matches!(
        s.work,
        MemWork::Loaded {
            socket: 0,
            node: 2,
            local: false,
            ..
        }
    )));
}

/// The last-level cache is walked past wherever the machine can afford it: with the
/// default memory budget scaled to the machine (3 × the cache, within 5% of the memory
/// available now), `cache` and `infer` plan their walk beyond twice a 0.3, 1 and 1.5 GiB
/// L3, each within its time budget, and the plan says how the memory budget was chosen.
#[test]
fn the_llc_walk_passes_a_large_last_level_cache_with_the_scaled_budget() {
    use topoprobe_measure::plan::scaled_memory;
    for llc in [300 * MIB, GIB, 1536 * MIB] {
        let m = Machine {
            name: format!("16 cores, {} MiB L3", llc / MIB),
            os: os_view(&regular(1, 16, 2), 1, llc, 1),
        };
        let shape = m.shape();
        let available = Some(256 * GIB);
        // `cache`: the command's default, scaled.
        let (bytes, basis) = scaled_memory(COMMAND.bytes, shape.largest_llc(), available);
        assert_eq!(bytes, 3 * llc + PROCESS_BYTES, "{}: {basis}", m.name);
        let budget = Budget::new(COMMAND.seconds, bytes);
        let c = cache::plan_caches(
            &shape.cache_levels,
            true,
            &CacheOptions {
                budget,
                ..CacheOptions::default()
            },
        );
        within(&c.cost(), budget, &format!("{}: cache", m.name));
        assert!(
            c.max_bytes >= 2 * llc,
            "{}: cache walks to {} MiB: {:?}",
            m.name,
            c.max_bytes / MIB,
            c.notes
        );
        // Today's fixed budget stops short of it and says the OS's size is kept.
        let fixed = cache::plan_caches(
            &shape.cache_levels,
            true,
            &CacheOptions {
                budget: COMMAND,
                ..CacheOptions::default()
            },
        );
        assert!(fixed.max_bytes < 2 * llc, "{}", m.name);
        assert!(
            fixed.notes.iter().any(|n| n.contains("unchecked")),
            "{}: {:?}",
            m.name,
            fixed.notes
        );
        // `infer` with its default plugins: its memory budget scaled the same way. Its
        // time is kept: within 10 s the walk passes twice a 300 MiB L3; past that it
        // stops where the time runs out and says so, and a longer budget walks past.
        let wanted = in_order(&plugins::parse(plugins::DEFAULT).unwrap());
        let default = default_budget(&wanted);
        let (bytes, _) = scaled_memory(default.bytes, shape.largest_llc(), available);
        for seconds in [default.seconds, 30.0] {
            let budget = Budget::new(seconds, bytes);
            let plan = plan_measurement(
                &shape,
                Some(&m.os),
                &wanted,
                Sampling::default(),
                Repetitions::default(),
                budget,
                true,
            )
            .unwrap_or_else(|e| panic!("{}: {e}", m.name));
            within(&plan.cost, budget, &format!("{}: infer", m.name));
            let walk = plan
                .cost
                .steps
                .iter()
                .find(|s| s.what.starts_with("caches: walk"))
                .unwrap_or_else(|| panic!("{}: no walk", m.name));
            let short_of_time = plan
                .cost
                .left_out
                .iter()
                .any(|n| n.starts_with("the walk stops at") && n.contains("s budget"));
            assert!(
                walk.bytes >= 2 * llc || (llc > 300 * MIB && seconds < 30.0 && short_of_time),
                "{}: infer in {seconds} s walks to {} MiB:\n{}",
                m.name,
                walk.bytes / MIB,
                topoprobe_view::cost::render(&plan.cost)
            );
        }
    }
    // Little memory available: the budget stays within 5% of it, never below the default.
    let (bytes, basis) = scaled_memory(COMMAND.bytes, Some(1536 * MIB), Some(16 * GIB));
    assert_eq!(bytes, 16 * GIB / 20 / MIB * MIB, "{basis}");
    assert!(basis.contains("5% of the 16 GiB available now"), "{basis}");
}
