//! `infer --from-matrix` with hints the latencies contradict: the run succeeds, the hint is
//! followed (the user asked) with a confidence of at most 0.25, and a `hint_contradicted`
//! warning naming the latencies and what they give without the hint reaches the text and
//! the JSON description.
//!
//! Fixtures (copies of `shared/data`): `nv-ryzen9-5950x.csv` (one socket of two CCDs of 8
//! SMT2 cores: SMT 7.5 ns, 16–21 ns inside a CCD, 82–88 ns between them) and
//! `nv-2x-epyc-7742.csv` (2 sockets × 64 cores × 2 SMT, 256 contexts).

use crate::common;

use assert_cmd::Command;
use common::data;
use serde_json::Value;
use topoprobe_model::WarningKind;

/// Runs `infer --from-matrix FILE ARGS...`, asserts success, returns standard output.
fn infer(file: &str, args: &[&str]) -> String {
    let out = Command::new(common::exe())
        .args(["infer", "--from-matrix"])
        .arg(data(file))
        .args(args)
        .output()
        .expect("run topoprobe");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The `hint_contradicted` warnings of a JSON description.
fn contradictions(json: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(json).expect("JSON description");
    v["validation"]["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter(|w| w["kind"] == WarningKind::HintContradicted.as_str())
        .map(|w| w["message"].as_str().expect("message").to_string())
        .collect()
}

/// The socket level's confidence in a JSON description.
fn confidence(v: &Value, level: &str) -> f64 {
    v["validation"]["confidence"]
        .as_array()
        .expect("confidence")
        .iter()
        .find(|c| c["level"] == level)
        .and_then(|c| c["confidence"].as_f64())
        .expect("a confidence per level")
}

/// How every contradiction of a typed hint ends.
const FOLLOWED: &str =
    "the hint is followed as given (leave it out to keep what the latencies show)";

#[test]
fn four_sockets_on_a_one_socket_desktop_are_flagged() {
    let text = infer("nv-ryzen9-5950x.csv", &["--sockets", "4"]);
    assert!(
        text.contains("--sockets 4 contradicts the latencies: the 4 sockets it forces are "),
        "{text}"
    );
    assert!(
        text.contains("while the latencies' widest gap above that is between 20.7 ns and 81.9 ns"),
        "{text}"
    );
    assert!(
        text.contains(&format!("inferred without the hint: 1 socket; {FOLLOWED}")),
        "{text}"
    );
    assert!(text.contains("sockets: 4 (given)"), "{text}");
    assert!(
        text.contains("contradicted by the latencies, which give 1 socket"),
        "{text}"
    );

    let json = infer("nv-ryzen9-5950x.csv", &["--sockets", "4", "--json"]);
    assert_eq!(contradictions(&json).len(), 1, "{json}");
    let v: Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["facts"]["sockets"]["value"], 4);
    assert_eq!(v["facts"]["sockets"]["origin"], "given");
    assert!(confidence(&v, "socket") <= 0.25);
}

#[test]
fn a_socket_per_context_is_flagged() {
    let json = infer("nv-2x-epyc-7742.csv", &["--sockets", "256", "--json"]);
    let msgs = contradictions(&json);
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(
        msgs[0].starts_with(
            "--sockets 256 contradicts the latencies: the 256 sockets it forces are 8.0 ns apart \
             inside a core (SMT), splitting 128 cores"
        ),
        "{}",
        msgs[0]
    );
    assert!(
        msgs[0].ends_with(&format!("inferred without the hint: 2 sockets; {FOLLOWED}")),
        "{}",
        msgs[0]
    );
    let v: Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["facts"]["sockets"]["value"], 256);
    assert!(confidence(&v, "socket") <= 0.25);
}

#[test]
fn smt_off_on_clear_siblings_is_flagged() {
    let text = infer("nv-ryzen9-5950x.csv", &["--smt", "no"]);
    assert!(
        text.contains("--smt no contradicts the latencies: 16 pairs of contexts communicate at"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "inferred without the hint: SMT, 16 cores with several contexts; {FOLLOWED}"
        )),
        "{text}"
    );
    assert!(text.contains("SMT: no (given)"), "{text}");
}

#[test]
fn a_hint_that_agrees_makes_no_warning() {
    let text = infer("nv-2x-epyc-7742.csv", &["--sockets", "2", "--smt", "yes"]);
    assert!(!text.contains("hint_contradicted"), "{text}");
    assert!(text.contains("sockets: 2 (given)"), "{text}");
}
