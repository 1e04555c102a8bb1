use topoprobe_infer::sim::{platforms, Noise, SimProbe};
use topoprobe_infer::sparse::{collect_sparse, SparseOptions};
use topoprobe_infer::{collect_full, infer};

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap();
    let sigma: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0.02);
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let full: bool = args.next().is_some();
    let base = platforms::all()
        .into_iter()
        .chain([platforms::ccx_server(12)])
        .find(|s| s.name == name)
        .unwrap();
    let spec = base.with_noise(Noise::lognormal(sigma, seed).with_outliers(0.002, 3.0));
    let mut probe = SimProbe::new(&spec).unwrap().with_drift(1.3, 100).unwrap();
    let c = if full {
        collect_full(&mut probe, &mut |_, _| {}).unwrap()
    } else {
        collect_sparse(
            &mut probe,
            &SparseOptions {
                seed,
                ..Default::default()
            },
            &mut |_, _| {},
        )
        .unwrap()
    };
    let n = spec.contexts();
    let mut errs = vec![];
    for a in 0..n {
        for b in a + 1..n {
            let t = spec.true_latency(a, b);
            match c.latency.get(a, b) {
                Some(v) => errs.push((
                    (v / t).ln().abs(),
                    a,
                    b,
                    v,
                    t,
                    c.measured.get(a, b).is_some(),
                )),
                None => println!("missing {a} {b}"),
            }
        }
    }
    errs.sort_by(|x, y| y.0.total_cmp(&x.0));
    for e in errs.iter().take(15) {
        println!(
            "{:.3} ({}, {}) got {:.2} true {:.2} measured {}",
            e.0, e.1, e.2, e.3, e.4, e.5
        );
    }
    println!("pairs {} calls {}", c.pairs, c.measurements);
    if let Ok(v) = std::env::var("ROWS") {
        let v: Vec<usize> = v.split(',').map(|x| x.parse().unwrap()).collect();
        for b in 0..n {
            let r: Vec<f64> = v
                .iter()
                .map(|&a| c.latency.get(a, b).unwrap_or(0.0))
                .collect();
            let mx = r.iter().cloned().fold(0.0, f64::max);
            let mn = r.iter().cloned().filter(|&x| x > 0.0).fold(1e9, f64::min);
            if mx / mn > 1.005 && !v.contains(&b) {
                println!("col {b}: {:?}", r);
            }
        }
    }
    if let Ok(v) = std::env::var("BLOCK") {
        let v: Vec<usize> = v.split(',').map(|x| x.parse().unwrap()).collect();
        for a in v[0]..v[1] {
            for b in v[2]..v[3] {
                print!(
                    "{:>7.1}{}",
                    c.latency.get(a, b).unwrap_or(0.0),
                    if c.measured.get(a, b).is_some() {
                        "*"
                    } else {
                        " "
                    }
                );
            }
            println!();
        }
    }
    let topo = infer(&c.latency, &spec.infer_options()).unwrap();
    for co in topo.cores() {
        if co.contexts.len() != spec.contexts() / spec.cores() {
            print!("{:?} ", co.contexts.iter().map(|c| c.0).collect::<Vec<_>>());
        }
    }
    println!();
    let t0 = infer(&spec.true_matrix(), &spec.infer_options()).unwrap();
    println!("true matrix: {:?}", spec.truth().check(&t0));
    let truth = spec.truth();
    let mut k = 0u64;
    let mut m2 = spec.true_matrix();
    for a in 0..n {
        for b in a + 1..n {
            if truth.core[a] == truth.core[b] {
                k += 1;
                let f = 1.0 + 0.01 * (((k * 2654435761) % 1000) as f64 / 500.0 - 1.0);
                let v = m2.get(a, b).unwrap() * f;
                m2.set(a, b, Some(v));
                m2.set(b, a, Some(v));
            }
        }
    }
    let t2 = infer(&m2, &spec.infer_options()).unwrap();
    println!("true + smt noise: {:?}", spec.truth().check(&t2));
    for g in topo.groups() {
        if g.contexts.iter().any(|c| c.0 >= 128 && c.0 < 136) {
            println!(
                "group {:?}",
                g.contexts.iter().map(|c| c.0).collect::<Vec<_>>()
            );
        }
    }
    println!("warnings {:?}", topo.validation().warnings);
    println!("{:?}", spec.truth().check(&topo));
    println!("unresolved {:?}", topo.validation().unresolved);
}
#[allow(dead_code)]
fn unused() {}
