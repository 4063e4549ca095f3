//! The host side of the on-target check: the deterministic suite (`harness/suite`) run natively on
//! x86_64, compared case by case, bit for bit, with the logs the firmware (`harness/firmware`)
//! prints under QEMU on a Cortex-M4F (hard-float `thumbv7em-none-eabihf`, machine `mps2-an386`)
//! and a Cortex-M0 (soft-float `thumbv6m-none-eabi`, machine `microbit`; the suite is split into
//! shards that each fit its 256 KiB of flash).
//!
//! Producing the logs (see `harness/firmware/run.sh`):
//!
//! ```text
//! harness/firmware/run.sh m4 /tmp/m4.log
//! harness/firmware/run.sh m0 /tmp/m0.log
//! SOFTMAX_FIRMWARE_LOG_M4=/tmp/m4.log SOFTMAX_FIRMWARE_LOG_M0=/tmp/m0.log \
//!     cargo test -p harness --test on_target -- --include-ignored
//! ```
//!
//! The comparison demands equality on all three machines: softmax-core promises the same bits
//! everywhere (fixed lane order, no FMA, no fast-math), and no case is exempt.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;

const ENV_M4: &str = "SOFTMAX_FIRMWARE_LOG_M4";
const ENV_M0: &str = "SOFTMAX_FIRMWARE_LOG_M0";

// ------------------------------------------------------------------------------------------------
// Host side
// ------------------------------------------------------------------------------------------------

/// The host's digest of every case with `seed`, or the panic message of a case that panicked
/// (a panicking case is a failure, reported with the others instead of hiding them). The panic
/// hook is left alone: it is global, and the tests run in parallel.
fn host_digests(seed: u64) -> Vec<(&'static str, Result<u64, String>)> {
    suite::cases()
        .iter()
        .map(|case| {
            let r = panic::catch_unwind(AssertUnwindSafe(|| suite::run_case(case, seed)));
            let r = r.map_err(|p| {
                p.downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "non-string panic payload".to_string())
            });
            (case.name, r)
        })
        .collect()
}

/// Panics listing every case that panicked on the host.
fn require_no_panics(host: &[(&str, Result<u64, String>)]) -> Vec<(String, u64)> {
    let panicked: Vec<String> = host
        .iter()
        .filter_map(|(n, r)| r.as_ref().err().map(|e| format!("  {n}: {e}")))
        .collect();
    assert!(
        panicked.is_empty(),
        "{} of {} cases panicked on the host:\n{}",
        panicked.len(),
        host.len(),
        panicked.join("\n")
    );
    host.iter()
        .map(|(n, r)| (n.to_string(), *r.as_ref().unwrap()))
        .collect()
}

// ------------------------------------------------------------------------------------------------
// Logs
// ------------------------------------------------------------------------------------------------

/// One image's part of a firmware log: `shard <index> <of>`, its case lines, `done <count>`.
#[derive(Debug)]
struct Shard {
    index: usize,
    of: usize,
    names: Vec<String>,
}

/// A parsed firmware log: one or more shards (the Cortex-M0 image cannot hold the whole suite,
/// so `run.sh m0` runs the shards one after another and concatenates their output).
#[derive(Debug)]
struct Log {
    cases: BTreeMap<String, u64>,
    shards: Vec<Shard>,
}

/// Parses a firmware log strictly. An error: any line other than `shard`/`case`/`done`; a case
/// outside a shard; a malformed digest; a case reported twice; a shard without its `done` line
/// (the image crashed, hung or timed out) or with a `done` count that disagrees with its case
/// lines; shards that disagree on their number, repeat, or leave one out.
fn parse_log(text: &str) -> Result<Log, String> {
    let mut cases = BTreeMap::new();
    let mut shards: Vec<Shard> = Vec::new();
    let mut open = false; // inside a shard, before its `done`
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        let lineno = i + 1;
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["shard", index, of] => {
                if open {
                    return Err(format!(
                        "line {lineno}: new shard before the `done` of the previous one"
                    ));
                }
                let parse = |w: &str| {
                    w.parse::<usize>()
                        .map_err(|e| format!("line {lineno}: bad shard number {w:?}: {e}"))
                };
                let (index, of) = (parse(index)?, parse(of)?);
                if index >= of {
                    return Err(format!("line {lineno}: shard {index} of {of}"));
                }
                if let Some(first) = shards.first() {
                    if first.of != of {
                        return Err(format!(
                            "line {lineno}: shard {index} of {of}, but the log began with shards of {}",
                            first.of
                        ));
                    }
                }
                if shards.iter().any(|s| s.index == index) {
                    return Err(format!("line {lineno}: shard {index} appears twice"));
                }
                shards.push(Shard {
                    index,
                    of,
                    names: Vec::new(),
                });
                open = true;
            }
            ["case", name, hex] => {
                let shard = match shards.last_mut() {
                    Some(s) if open => s,
                    _ => return Err(format!("line {lineno}: case outside a shard: {line:?}")),
                };
                if hex.len() != 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(format!(
                        "line {lineno}: digest is not 16 hex digits: {line:?}"
                    ));
                }
                let d = u64::from_str_radix(hex, 16).map_err(|e| format!("line {lineno}: {e}"))?;
                if cases.insert(name.to_string(), d).is_some() {
                    return Err(format!("line {lineno}: case {name} reported twice"));
                }
                shard.names.push(name.to_string());
            }
            ["done", n] => {
                let shard = match shards.last() {
                    Some(s) if open => s,
                    _ => return Err(format!("line {lineno}: `done` outside a shard")),
                };
                let n = n
                    .parse::<usize>()
                    .map_err(|e| format!("line {lineno}: bad count {n:?}: {e}"))?;
                if n != shard.names.len() {
                    return Err(format!(
                        "line {lineno}: `done {n}` but shard {} has {} case lines",
                        shard.index,
                        shard.names.len()
                    ));
                }
                open = false;
            }
            _ => return Err(format!("line {lineno}: unexpected line {line:?}")),
        }
    }
    if open {
        let s = shards.last().map_or(0, |s| s.index);
        let n = shards.last().map_or(0, |s| s.names.len());
        return Err(format!(
            "shard {s} has no `done` line after {n} cases: the firmware stopped early \
             (crash, hang or timeout)"
        ));
    }
    let Some(of) = shards.first().map(|s| s.of) else {
        return Err("empty log: no shard ran".to_string());
    };
    if shards.len() != of {
        let have: BTreeSet<usize> = shards.iter().map(|s| s.index).collect();
        let missing: Vec<usize> = (0..of).filter(|i| !have.contains(i)).collect();
        return Err(format!("shards {missing:?} of {of} are missing"));
    }
    Ok(Log { cases, shards })
}

// ------------------------------------------------------------------------------------------------
// Comparison
// ------------------------------------------------------------------------------------------------

/// Compares the host digests with each named log. Returns the readable report and whether
/// everything matched.
fn compare(host: &[(String, u64)], logs: &[(&str, &Log)]) -> (String, bool) {
    let mut ok = true;
    let mut report = String::new();
    let host_map: BTreeMap<&str, u64> = host.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    for (machine, log) in logs {
        // Shard `i` of `n` runs the cases whose index in the table is `i` modulo `n`, in order.
        for shard in &log.shards {
            let expected: Vec<&str> = host
                .iter()
                .enumerate()
                .filter(|(k, _)| k % shard.of == shard.index)
                .map(|(_, (n, _))| n.as_str())
                .collect();
            let got: Vec<&str> = shard.names.iter().map(String::as_str).collect();
            if got != expected {
                ok = false;
                let _ = writeln!(
                    report,
                    "{machine}: shard {} of {} ran {} cases, expected the {} cases at index {} \
                     modulo {} in table order",
                    shard.index,
                    shard.of,
                    got.len(),
                    expected.len(),
                    shard.index,
                    shard.of
                );
            }
        }
    }
    let mut names: BTreeSet<&str> = host_map.keys().copied().collect();
    for (_, log) in logs {
        names.extend(log.cases.keys().map(String::as_str));
    }
    // Order: the host's order first, then names only the logs know.
    let mut rows: Vec<&str> = host.iter().map(|(n, _)| n.as_str()).collect();
    rows.extend(names.iter().filter(|n| !host_map.contains_key(*n)));

    let width = rows.iter().map(|n| n.len()).max().unwrap_or(4).max(4);
    let mut table = String::new();
    let _ = write!(table, "{:width$}  {:16}", "case", "x86_64");
    for (machine, _) in logs {
        let _ = write!(table, "  {machine:16}");
    }
    let _ = writeln!(table, "  status");
    let fmt =
        |d: Option<u64>| d.map_or_else(|| "-- missing --".to_string(), |d| format!("{d:016x}"));
    let (mut same, mut differ) = (0, 0);
    for name in rows {
        let h = host_map.get(name).copied();
        let theirs: Vec<Option<u64>> = logs
            .iter()
            .map(|(_, l)| l.cases.get(name).copied())
            .collect();
        let status = if h.is_none() {
            "EXTRA (not in the host suite)"
        } else if theirs.iter().any(Option::is_none) {
            "MISSING from a log"
        } else if theirs.iter().all(|&t| t == h) {
            same += 1;
            continue;
        } else {
            "DIGEST MISMATCH"
        };
        differ += 1;
        ok = false;
        let _ = write!(table, "{name:width$}  {:16}", fmt(h));
        for t in &theirs {
            let mark = if *t == h { "" } else { "*" };
            let _ = write!(table, "  {:16}", format!("{}{mark}", fmt(*t)));
        }
        let _ = writeln!(table, "  {status}");
    }
    let machines: Vec<&str> = logs.iter().map(|(m, _)| *m).collect();
    let _ = writeln!(
        report,
        "{same} of {} cases identical on x86_64 and {}; {differ} differ (* = differs from x86_64)",
        host.len(),
        machines.join(", ")
    );
    if differ > 0 {
        report.push_str(&table);
    }
    (report, ok)
}

fn read_log(var: &str) -> Log {
    let path = std::env::var_os(var).unwrap_or_else(|| {
        panic!(
            "{var} is not set. This test compares the firmware's QEMU logs with the host: build \
             and run them with harness/firmware/run.sh (m4 and m0), then set {ENV_M4} and {ENV_M0} \
             to the two log files"
        )
    });
    let path = Path::new(&path);
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{var}={}: cannot read: {e}", path.display()));
    parse_log(&text).unwrap_or_else(|e| panic!("{var}={}: {e}", path.display()))
}

#[test]
#[ignore = "needs QEMU logs: run harness/firmware/run.sh m4 <log> and m0 <log>, set \
            SOFTMAX_FIRMWARE_LOG_M4 and SOFTMAX_FIRMWARE_LOG_M0, run with --include-ignored"]
fn firmware_digests_match_host_bit_for_bit() {
    let m4 = read_log(ENV_M4);
    let m0 = read_log(ENV_M0);
    let host = require_no_panics(&host_digests(suite::DEFAULT_SEED));
    let (report, ok) = compare(&host, &[("cortex-m4f", &m4), ("cortex-m0", &m0)]);
    println!("{report}");
    assert!(ok, "on-target digests differ from the host:\n{report}");
}

// ------------------------------------------------------------------------------------------------
// Always-on checks of the suite and of the checker itself
// ------------------------------------------------------------------------------------------------

#[test]
fn suite_is_deterministic_named_and_input_sensitive() {
    let a = require_no_panics(&host_digests(suite::DEFAULT_SEED));
    let b = require_no_panics(&host_digests(suite::DEFAULT_SEED));
    assert_eq!(a, b, "two runs of the suite on the same machine differ");

    let mut seen = BTreeSet::new();
    for (name, _) in &a {
        assert!(
            !name.is_empty() && name.bytes().all(|c| c.is_ascii_graphic()),
            "case name {name:?} must be non-empty printable ASCII without spaces"
        );
        assert!(seen.insert(name.clone()), "case name {name} is not unique");
    }

    // Every case digests something: no digest is the digest of nothing.
    let empty = suite::Digest::new().finish();
    for (name, d) in &a {
        assert_ne!(
            *d, empty,
            "{name}: digest of nothing (the case feeds no result)"
        );
    }

    // Every case depends on its inputs: another seed changes every digest.
    let other = require_no_panics(&host_digests(suite::DEFAULT_SEED ^ 0x9e37_79b9_7f4a_7c15));
    for ((name, d1), (_, d2)) in a.iter().zip(&other) {
        assert_ne!(
            d1, d2,
            "{name}: digest does not change when the inputs change"
        );
    }

    // (Two cases may legitimately share a digest: e.g. Poly and Libm give bit-identical KL
    // divergences on every row of the suite, so the digests are not required to be distinct.)
}

/// A log the host would accept, from the host's own digests, split into `shards` images.
fn log_text(host: &[(String, u64)], shards: usize) -> String {
    let mut s = String::new();
    for i in 0..shards {
        let _ = writeln!(s, "shard {i} {shards}");
        let mine: Vec<_> = host.iter().skip(i).step_by(shards).collect();
        for (n, d) in &mine {
            let _ = writeln!(s, "case {n} {d:016x}");
        }
        let _ = writeln!(s, "done {}", mine.len());
    }
    s
}

#[test]
fn checker_accepts_a_matching_log_and_rejects_every_kind_of_damage() {
    let host: Vec<(String, u64)> = vec![
        ("a/f32".into(), 0x0123_4567_89ab_cdef),
        ("b/f32".into(), 1),
        ("c/f64".into(), u64::MAX),
    ];
    let good = log_text(&host, 1);
    assert!(compare(&host, &[("m", &parse_log(&good).unwrap())]).1);
    let sharded = log_text(&host, 2);
    assert!(sharded.contains("shard 1 2\ncase b/f32"), "{sharded}");
    assert!(compare(&host, &[("m", &parse_log(&sharded).unwrap())]).1);

    // One digest bit flipped.
    let bad = good.replace("0000000000000001", "0000000000000003");
    let (report, ok) = compare(&host, &[("m", &parse_log(&bad).unwrap())]);
    assert!(
        !ok && report.contains("DIGEST MISMATCH") && report.contains("b/f32"),
        "{report}"
    );

    // A case missing (with a consistent `done` count), and an extra one.
    let missing = "shard 0 1\ncase a/f32 0123456789abcdef\ncase c/f64 ffffffffffffffff\ndone 2\n";
    let (report, ok) = compare(&host, &[("m", &parse_log(missing).unwrap())]);
    assert!(!ok && report.contains("MISSING"), "{report}");
    let extra = good.replace("done 3", "case z/f32 0000000000000000\ndone 4");
    let (report, ok) = compare(&host, &[("m", &parse_log(&extra).unwrap())]);
    assert!(!ok && report.contains("EXTRA"), "{report}");

    // Reordered, and a case run by the wrong shard.
    let swapped = "shard 0 1\ncase b/f32 0000000000000001\ncase a/f32 0123456789abcdef\n\
                   case c/f64 ffffffffffffffff\ndone 3\n";
    assert!(!compare(&host, &[("m", &parse_log(swapped).unwrap())]).1);
    let moved = "shard 0 2\ncase a/f32 0123456789abcdef\ncase b/f32 0000000000000001\ndone 2\n\
                 shard 1 2\ncase c/f64 ffffffffffffffff\ndone 1\n";
    let (report, ok) = compare(&host, &[("m", &parse_log(moved).unwrap())]);
    assert!(!ok && report.contains("shard 0 of 2"), "{report}");

    // Structural damage the parser must reject.
    for (what, text) in [
        ("no done", good.replace("done 3\n", "")),
        ("wrong count", good.replace("done 3", "done 4")),
        (
            "duplicate",
            good.replace("done 3", "case a/f32 0123456789abcdef\ndone 4"),
        ),
        ("short digest", good.replace("0000000000000001", "1")),
        (
            "non-hex digest",
            good.replace("0000000000000001", "000000000000000g"),
        ),
        (
            "case after done",
            format!("{good}case d/f32 0000000000000000\n"),
        ),
        (
            "case before shard",
            format!("case d/f32 0000000000000000\n{good}"),
        ),
        ("garbage line", format!("panic: something\n{good}")),
        ("two done lines", format!("{good}done 3\n")),
        ("empty log", String::new()),
        (
            "missing shard",
            sharded.split("shard 1 2").next().unwrap().to_string(),
        ),
        ("repeated shard", sharded.replace("shard 1 2", "shard 0 2")),
        (
            "shard counts disagree",
            sharded.replace("shard 1 2", "shard 1 3"),
        ),
        (
            "shard index out of range",
            good.replace("shard 0 1", "shard 1 1"),
        ),
        (
            "shard cut short",
            sharded.replace("done 2\nshard 1 2", "shard 1 2"),
        ),
    ] {
        assert!(
            parse_log(&text).is_err(),
            "accepted a log with {what}:\n{text}"
        );
    }
}

/// The firmware is its own Cargo project with its own lock file. If it resolved another version
/// of `libm` or `micromath` than the workspace, host and target would run different exp/ln code
/// and the comparison would be meaningless (or fail for the wrong reason); likewise `half`, whose
/// conversions are the f16 and bf16 rounding of the reduced KV caches.
#[test]
fn firmware_lockfile_pins_the_same_math_crates_as_the_workspace() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let versions = |lock: &Path| -> BTreeMap<String, String> {
        let text = std::fs::read_to_string(lock)
            .unwrap_or_else(|e| panic!("{}: {e} (commit the lock file)", lock.display()));
        let mut out = BTreeMap::new();
        for block in text.split("[[package]]") {
            let field = |key: &str| {
                block.lines().find_map(|l| {
                    l.strip_prefix(key)
                        .and_then(|r| r.trim().strip_prefix('='))
                        .map(|v| v.trim().trim_matches('"').to_string())
                })
            };
            if let (Some(name), Some(version)) = (field("name "), field("version ")) {
                out.insert(name, version);
            }
        }
        out
    };
    let ws = versions(&root.join("Cargo.lock"));
    let fw = versions(&root.join("harness/firmware/Cargo.lock"));
    let np = versions(&root.join("harness/no-panic/Cargo.lock"));
    for krate in ["libm", "micromath", "half"] {
        let want = ws
            .get(krate)
            .unwrap_or_else(|| panic!("{krate} not in Cargo.lock"));
        assert_eq!(
            fw.get(krate),
            Some(want),
            "{krate}: firmware lock differs from workspace"
        );
        assert_eq!(
            np.get(krate),
            Some(want),
            "{krate}: no-panic lock differs from workspace"
        );
    }
}
