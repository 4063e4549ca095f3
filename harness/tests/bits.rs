//! The bit-identity fixture: what the kernels answer must not change when the code around them
//! is reorganised.
//!
//! Two records, committed next to this file in `harness/tests/bits/`:
//!
//! * `conform_expected.txt`: for every line of `cases.jsonl` (1,333 requests of every
//!   `harness conform` op, f32 and f64, with their options, edge values and structural errors;
//!   generated once by `gen_cases.py`), the request's id and a 64-bit digest (FNV-1a) of the
//!   answer line `harness conform` printed, byte for byte. The answer's floats are printed in
//!   shortest round-trip form, so the digest changes with any result bit (NaN excepted: it is
//!   printed as `"nan"`).
//! * `suite_expected.txt`: the host digest of every case of the on-target suite
//!   (`harness/suite`, the cases the Cortex-M4F and M0 firmware runs) for three seeds.
//!
//! A change that is meant to change bits (a bug fix) rewrites the records with
//! `SOFTMAX_BITS_BLESS=1 cargo test -p harness --test bits`, and its commit lists the cases whose
//! digests changed and why. Everything else must leave them alone.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

#[path = "conform_support/mod.rs"]
mod conform_support;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/bits")
}

/// FNV-1a, 64 bits.
fn fnv(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// `name digest` lines, in order.
fn render(rows: &[(String, u64)]) -> String {
    let mut s = String::new();
    for (name, d) in rows {
        writeln!(s, "{name} {d:016x}").unwrap();
    }
    s
}

fn parse(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .map(|l| {
            let (name, d) = l.rsplit_once(' ').expect("`name digest` line");
            (
                name.to_string(),
                u64::from_str_radix(d, 16).expect("hex digest"),
            )
        })
        .collect()
}

/// Compares fresh digests with the committed record (or rewrites it when blessing); `detail`
/// gives what to print for a case that changed.
fn check(file: &str, fresh: &[(String, u64)], detail: impl Fn(&str) -> String) {
    let path = dir().join(file);
    // Only the value 1 re-records: `SOFTMAX_BITS_BLESS=0` (or empty) still checks.
    if std::env::var("SOFTMAX_BITS_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, render(fresh)).expect("write record");
        eprintln!("re-recorded {} ({} entries)", path.display(), fresh.len());
        return;
    }
    let text = std::fs::read_to_string(&path).expect("read record");
    let old = parse(&text);
    let old_map: BTreeMap<&str, u64> = old.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    let new_map: BTreeMap<&str, u64> = fresh.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    let mut report = String::new();
    for (name, d) in &new_map {
        match old_map.get(name) {
            None => writeln!(report, "  new case {name}").unwrap(),
            Some(o) if o != d => writeln!(
                report,
                "  changed {name}: {o:016x} -> {d:016x}\n    {}",
                detail(name)
            )
            .unwrap(),
            _ => {}
        }
    }
    for name in old_map.keys() {
        if !new_map.contains_key(name) {
            writeln!(report, "  missing case {name}").unwrap();
        }
    }
    assert!(
        report.is_empty(),
        "{file}: results differ from the committed record ({} cases):\n{report}",
        fresh.len()
    );
    assert_eq!(old.len(), fresh.len(), "{file}: duplicate names");
}

#[test]
fn conform_answers_unchanged() {
    let input = std::fs::read(dir().join("cases.jsonl")).expect("read cases");
    let ids: Vec<String> = input
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .enumerate()
        .map(|(i, l)| {
            let id = serde_json::from_slice::<serde_json::Value>(l)
                .ok()
                .and_then(|v| v.get("id").map(|id| id.to_string()))
                .unwrap_or_else(|| "null".into());
            format!("{i:04} {id}")
        })
        .collect();
    let answers = conform_support::run_bytes(&input);
    assert_eq!(answers.len(), ids.len(), "one answer per request");
    let fresh: Vec<(String, u64)> = ids
        .iter()
        .zip(&answers)
        .map(|(id, a)| (id.clone(), fnv(a.as_bytes())))
        .collect();
    let by_id: BTreeMap<&str, &str> = ids
        .iter()
        .map(String::as_str)
        .zip(answers.iter().map(String::as_str))
        .collect();
    check("conform_expected.txt", &fresh, |name| {
        let a = by_id.get(name).copied().unwrap_or("");
        let cut = a.char_indices().nth(400).map_or(a.len(), |(i, _)| i);
        format!("answer now: {}", &a[..cut])
    });
}

#[test]
fn suite_digests_unchanged() {
    let mut fresh = Vec::new();
    for seed in [suite::DEFAULT_SEED, 1, 0x5eed] {
        suite::run_all_seeded(seed, |name, d| fresh.push((format!("{seed}/{name}"), d)));
    }
    check("suite_expected.txt", &fresh, |_| String::new());
}
