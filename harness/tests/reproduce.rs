//! `docs/seeds-claims.md` is what `harness reproduce` prints: the seeds' claims, checked by the
//! workspace's kernels. A kernel change that moves a computed value, or a check that changes its
//! verdict, shows up here as a difference.
//!
//! After a deliberate change: `cargo run -p harness -- reproduce docs/seeds-claims.md` (or
//! `SOFTMAX_REPRODUCE_BLESS=1 cargo test -p harness --test reproduce`) and commit the file.

use std::path::PathBuf;

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/seeds-claims.md")
}

#[test]
fn committed_table_is_a_fresh_run() {
    let fresh = harness::reproduce::render();
    let path = doc_path();
    if std::env::var("SOFTMAX_REPRODUCE_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, &fresh).expect("write docs/seeds-claims.md");
        return;
    }
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run harness reproduce)", path.display()));
    if committed != fresh {
        let first = committed
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(committed.lines().count().min(fresh.lines().count()));
        panic!(
            "docs/seeds-claims.md differs from a fresh `harness reproduce` from line {}:\n  committed: {:?}\n  fresh:     {:?}\n(regenerate it after a deliberate change)",
            first + 1,
            committed.lines().nth(first),
            fresh.lines().nth(first)
        );
    }
}

/// Every claim is complete, and every wrong one carries its corrected form.
#[test]
fn every_claim_is_complete() {
    use harness::reproduce::{claims, Verdict};
    let all = claims();
    for c in &all {
        assert!(
            !c.source.is_empty() && !c.claim.is_empty() && !c.method.is_empty(),
            "{c:?}"
        );
        match &c.verdict {
            Verdict::Wrong { corrected } => assert!(!corrected.is_empty(), "{c:?}"),
            Verdict::NotCheckable { why } => assert!(!why.is_empty(), "{c:?}"),
            Verdict::Holds => {}
        }
    }
}
