//! `topoprobe bench line-ops`.

use std::fmt::Write as _;

use anyhow::Result;
use topoprobe_sync::bench::line_ops::{self, Config, Op, Scope, State};

use super::{print_json, with_advice};
use crate::args::bench::LineOpsArgs;
use crate::output::write_stdout;
use crate::progress::spinner;

/// Runs the experiment.
pub(crate) fn run(args: &LineOpsArgs) -> Result<()> {
    let topo = args.common.load()?;
    let config = Config {
        rounds: args.rounds,
        cpu: args.cpu,
    };
    let s = spinner("line operations");
    let r = line_ops::run(&topo, &config)?;
    s.finish_and_clear();
    // The same pair's latency in the description (what `topoprobe latency` measures).
    let described = line_ops::find(&r, Op::Cas, State::Modified, Scope::Socket)
        .or_else(|| line_ops::find(&r, Op::Cas, State::Modified, Scope::Group))
        .and_then(|x| {
            let a = topo.context_by_os_id(x.cpus[0])?;
            let b = topo.context_by_os_id(x.cpus[1])?;
            Some((
                x.cpus[0],
                x.cpus[1],
                x.latency_ns,
                topo.context_latency(a, b)?,
            ))
        });
    let advice = line_ops::advice(&r);
    if args.common.json {
        return print_json(&serde_json::json!({
            "rounds": config.rounds,
            "results": r.results,
            "unavailable": r.unavailable,
            "described_latency": described.map(|(a, b, _, l)| serde_json::json!({
                "cpus": [a, b], "latency": l, "unit": topo.units().as_str()
            })),
            "advice": advice,
        }));
    }
    let mut out = format!(
        "latency of one operation, ns (median of {} rounds of 32 dependent lines)\n\n",
        config.rounds
    );
    let scopes: Vec<Scope> = [
        Scope::Core,
        Scope::Group,
        Scope::Socket,
        Scope::OtherSocket,
        Scope::Memory,
    ]
    .into_iter()
    .filter(|s| r.results.iter().any(|x| x.scope == *s))
    .collect();
    let _ = write!(out, "{:<6} {:<10}", "op", "state");
    for s in &scopes {
        let _ = write!(out, " {:>12}", scope_name(*s));
    }
    out.push('\n');
    for state in State::ALL {
        for op in Op::ALL {
            if !r.results.iter().any(|x| x.op == op && x.state == state) {
                continue;
            }
            let _ = write!(out, "{:<6} {:<10}", op_name(op), state_name(state));
            for &s in &scopes {
                match line_ops::find(&r, op, state, s) {
                    Some(x) => {
                        let _ = write!(out, " {:>12.1}", x.latency_ns);
                    }
                    None => {
                        let _ = write!(out, " {:>12}", "-");
                    }
                }
            }
            out.push('\n');
        }
    }
    for u in &r.unavailable {
        let _ = writeln!(
            out,
            "{}{}: unavailable: {}",
            scope_name(u.scope),
            u.state
                .map(|s| format!(" {}", state_name(s)))
                .unwrap_or_default(),
            u.reason
        );
    }
    if let Some((a, b, cas, l)) = described {
        let _ = writeln!(
            out,
            "\nCAS on a modified line, CPUs {a} and {b}: {cas:.1} ns; the description's latency for the pair: {l:.1} {} ({:.2}x)",
            topo.units(),
            cas / l
        );
    }
    write_stdout(with_advice(out, &advice).as_bytes())
}

fn scope_name(s: Scope) -> &'static str {
    match s {
        Scope::Core => "core",
        Scope::Group => "group",
        Scope::Socket => "socket",
        Scope::OtherSocket => "other_socket",
        Scope::Memory => "memory",
    }
}

fn op_name(o: Op) -> &'static str {
    match o {
        Op::Load => "load",
        Op::Store => "store",
        Op::Cas => "cas",
        Op::Fai => "fai",
        Op::Swap => "swap",
    }
}

fn state_name(s: State) -> &'static str {
    match s {
        State::Modified => "modified",
        State::Exclusive => "exclusive",
        State::Shared => "shared",
        State::Invalid => "invalid",
    }
}
