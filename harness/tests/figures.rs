//! The README's figures (`docs/figures/NAME.svg`) are drawn from `docs/figures/NAME.json`; this
//! test recomputes every figure's numbers with the kernels and compares them with the committed
//! JSON (the numbers, not the pixels). After a deliberate change: `cargo run -p harness --release
//! -- figures` and commit `docs/figures`.

use std::path::PathBuf;

#[test]
fn committed_figure_data_is_a_fresh_run() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/figures");
    for name in harness::figures::NAMES {
        let fresh = harness::figures::json_text(
            &harness::figures::data(name).expect("every listed figure has data"),
        );
        let path = dir.join(format!("{name}.json"));
        let committed = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run harness figures)", path.display()));
        assert!(
            committed == fresh,
            "{}: differs from a fresh computation (first differing line {:?}); regenerate with \
             `harness figures` after a deliberate change",
            path.display(),
            committed.lines().zip(fresh.lines()).find(|(a, b)| a != b)
        );
        assert!(
            dir.join(format!("{name}.svg")).exists(),
            "{name}.svg missing"
        );
    }
}
