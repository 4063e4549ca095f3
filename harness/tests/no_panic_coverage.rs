//! Keeps the panic-freedom proof complete: every public function and method of softmax-core must
//! be called by `harness/no-panic/src/main.rs`, the release build that links only if no panic path
//! survives (`harness/no-panic/check.sh`). A new public function cannot be added without its proof.
//!
//! The public surface is read from softmax-core's sources (not from a list kept here):
//!
//! * `pub fn` in `lib.rs`/`slice.rs` (the crate root) → `softmax_core::name(`;
//! * `pub fn` in `rows.rs` → `rows::name(`, in `array.rs` → `array::name(` (and so on for the
//!   other public modules: `chunks`, `simd`, `linalg`, `linalg::within`, `special`, `fast`,
//!   `quant`, `soft`, `stored`);
//! * `pub fn` in an `impl Type` block (`lse.rs`, `spec.rs`, `backend/*`): with a `self` receiver →
//!   `.name(`, without → `Type::name(`;
//! * the methods of the public traits (`Backend`, `Float`, `stored`'s `Operand` and `Stored`,
//!   attention-core's `Element`) → the trait's initial as the generic parameter the probe calls
//!   them through: `B::name(`, `F::name(`, `O::name(`, `S::name(`, `E::name(` (or `.name(` for
//!   methods with `self`);
//! * every `impl Backend<f32|f64> for Type` → `with_backend::<f32|f64, Type>(`, and every element
//!   type → `float_only::<f32|f64>(`, the two generic drivers of the probe.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One required call, and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Required {
    /// What must appear in the probe's code.
    pattern: String,
    /// Where the requirement comes from (`file: item`).
    origin: String,
}

fn core_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../softmax-core/src")
}

/// The probe's code: `main.rs` and every other file of `harness/no-panic/src` (one per crate).
fn probe_code() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("no-panic/src");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("harness/no-panic/src")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("probe source"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The crates built on softmax-core whose public functions the probe must call too: (directory,
/// crate identifier). Their free functions are required as a qualified call `::name(` (the
/// probe calls them through the crate's paths), methods as `.name(`, associated functions as
/// `Type::name(`.
const DEPENDENT_CRATES: &[(&str, &str)] = &[
    ("loss-core", "loss_core"),
    ("attention-core", "attention_core"),
];

/// Every `.rs` file under `dir`, recursively, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(rust_files(&p));
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Source text without `//` comments (doc comments included), so a call mentioned only in a
/// comment does not count and commented-out items are not extracted. String literals in these
/// files never contain `//`.
fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The identifier starting at `s` (letters, digits, `_`).
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Skips a balanced `<...>` at the start of `s` (after whitespace), returning the rest.
fn skip_generics(s: &str) -> &str {
    let s = s.trim_start();
    if !s.starts_with('<') {
        return s;
    }
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return &s[i + 1..];
                }
            }
            _ => {}
        }
    }
    ""
}

/// Whether the parameter list that follows the function name in `sig` starts with a `self`
/// receiver (`self`, `mut self`, `&self`, `&mut self`, `&'a self`, `&'a mut self`).
fn has_self(sig: &str) -> bool {
    let params = sig.split_once('(').map_or("", |(_, p)| p).trim_start();
    let p = match params.strip_prefix('&') {
        Some(p) => {
            let p = p.trim_start();
            match p.strip_prefix('\'') {
                Some(lifetime) => {
                    lifetime.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_')
                }
                None => p,
            }
        }
        None => params,
    }
    .trim_start();
    let p = p.strip_prefix("mut ").unwrap_or(p).trim_start();
    ident(p) == "self"
}

/// The rest of a line that declares a public function (`pub fn` or `pub const fn`).
fn pub_fn(line: &str) -> Option<&str> {
    line.strip_prefix("pub fn ")
        .or_else(|| line.strip_prefix("pub const fn "))
}

/// The requirements that one source file of softmax-core imposes. `module` is how its free
/// functions are reached from outside (`softmax_core`, `rows`, `array`).
fn requirements(file: &str, text: &str, module: &str) -> Vec<Required> {
    let code = strip_comments(text);
    let mut out = Vec::new();
    // Brace depth, and the block (impl type or public trait) we are in, with its depth.
    let mut depth: i32 = 0;
    let mut block: Option<(String, bool, i32)> = None; // (name, is_trait, depth inside)
    let lines: Vec<&str> = code.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        // The signature, possibly over several lines, up to its body or `;`.
        let sig = || {
            let mut s = String::new();
            for l in &lines[i..] {
                s.push_str(l);
                s.push(' ');
                if l.contains('{') || l.contains(';') {
                    break;
                }
            }
            s
        };
        if block.is_none() {
            if let Some(rest) = t.strip_prefix("impl") {
                if rest.starts_with(['<', ' ']) {
                    let rest = skip_generics(rest).trim_start();
                    // `impl Trait for Type` is a trait implementation: its methods are the
                    // trait's, required through the trait; skip it.
                    let ty = if sig().contains(" for ") {
                        String::new()
                    } else {
                        ident(rest).to_string()
                    };
                    block = Some((ty, false, depth + 1));
                }
            } else if let Some(rest) = t.strip_prefix("pub trait ") {
                // Only module-level traits are public API: one inside an inline module (the
                // sealing `pub(crate) mod private`) is not reachable from outside.
                if depth == 0 {
                    block = Some((ident(rest).to_string(), true, depth + 1));
                }
            }
        }
        match &block {
            Some((ty, true, d)) if depth == *d => {
                if let Some(rest) = t.strip_prefix("fn ") {
                    let name = ident(rest);
                    let pattern = if has_self(&sig()) {
                        format!(".{name}(")
                    } else {
                        // Trait items are called through the generic parameter of the probe's
                        // drivers: `B` for Backend, `F` for Float.
                        format!("{}::{name}(", &ty[..1])
                    };
                    out.push(Required {
                        pattern,
                        origin: format!("{file}: trait {ty}::{name}"),
                    });
                }
            }
            Some((ty, false, d)) if depth == *d && !ty.is_empty() => {
                if let Some(rest) = pub_fn(t) {
                    let name = ident(rest);
                    let pattern = if has_self(&sig()) {
                        format!(".{name}(")
                    } else {
                        format!("{ty}::{name}(")
                    };
                    out.push(Required {
                        pattern,
                        origin: format!("{file}: {ty}::{name}"),
                    });
                }
            }
            None if depth == 0 => {
                if let Some(rest) = pub_fn(t) {
                    let name = ident(rest);
                    out.push(Required {
                        pattern: format!("{module}::{name}("),
                        origin: format!("{file}: {name}"),
                    });
                }
            }
            _ => {}
        }
        // Every `impl Backend<fNN> for Type` needs the probe's driver for that pair.
        if let Some(rest) = t.strip_prefix("impl Backend<") {
            let float = ident(rest);
            if let Some((_, ty)) = rest.split_once(" for ") {
                let ty = ident(ty.trim_start());
                out.push(Required {
                    pattern: format!("with_backend::<{float}, {ty}>("),
                    origin: format!("{file}: impl Backend<{float}> for {ty}"),
                });
                out.push(Required {
                    pattern: format!("float_only::<{float}>("),
                    origin: format!("{file}: element type {float}"),
                });
            }
        }
        for c in line.chars() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if block.as_ref().is_some_and(|(_, _, d)| depth < *d) {
                        block = None;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// Every requirement softmax-core's sources impose, and the re-exports of `lib.rs` (each must be
/// called through the crate root).
fn all_requirements() -> Vec<Required> {
    let src = core_src();
    let read =
        |p: &Path| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut files: Vec<(String, String)> = [
        ("lib.rs", "softmax_core"),
        ("error.rs", "softmax_core"),
        ("slice.rs", "softmax_core"),
        ("rows.rs", "rows"),
        ("array.rs", "array"),
        ("lse.rs", "softmax_core"),
        ("spec.rs", "softmax_core"),
        ("float.rs", "softmax_core"),
        ("chunks.rs", "chunks"),
        ("simd.rs", "simd"),
        ("linalg/mod.rs", "linalg"),
        ("linalg/within.rs", "within"),
        ("special.rs", "special"),
        ("fast/mod.rs", "fast"),
        ("fast/passes.rs", "fast"),
        ("online.rs", "softmax_core"),
        ("quant/mod.rs", "quant"),
        ("quant/lut.rs", "quant"),
        ("quant/fixed.rs", "fixed"),
        ("soft/mod.rs", "soft"),
        ("stored.rs", "stored"),
    ]
    .iter()
    .map(|(f, m)| (f.to_string(), m.to_string()))
    .collect();
    let mut backends: Vec<PathBuf> = std::fs::read_dir(src.join("backend"))
        .expect("softmax-core/src/backend")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    backends.sort();
    for p in backends {
        let rel = format!("backend/{}", p.file_name().unwrap().to_string_lossy());
        files.push((rel, "backend".to_string()));
    }
    let mut out = Vec::new();
    for (file, module) in &files {
        out.extend(requirements(file, &read(&src.join(file)), module));
    }
    // `pub use slice::{a, b, ...};` in lib.rs: the names users call through the crate root.
    let lib = strip_comments(&read(&src.join("lib.rs")));
    if let Some((_, rest)) = lib.split_once("pub use slice::{") {
        let list = rest.split('}').next().unwrap_or("");
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            out.push(Required {
                pattern: format!("softmax_core::{name}("),
                origin: format!("lib.rs: pub use slice::{name}"),
            });
        }
    }
    // The crates built on softmax-core: every public function of every file.
    for (dir, _krate) in DEPENDENT_CRATES {
        let root = src.join("../..").join(dir).join("src");
        for path in rust_files(&root) {
            let rel = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .display()
                .to_string();
            out.extend(requirements(&format!("{dir}/{rel}"), &read(&path), ""));
        }
    }
    out.sort();
    out.dedup_by(|a, b| a.pattern == b.pattern);
    out
}

/// The requirements the probe's code does not meet. A call `path::name(` may also be written
/// with a turbofish, `path::name::<T>(` (a generic function whose type parameter appears in no
/// argument, such as `stored::row_bytes::<f16>(n)`, cannot be called otherwise).
fn missing(required: &[Required], probe: &str) -> Vec<Required> {
    let code = strip_comments(probe);
    let called = |pattern: &str| {
        code.contains(pattern)
            || pattern
                .strip_suffix('(')
                .is_some_and(|p| p.contains("::") && code.contains(&format!("{p}::<")))
    };
    required
        .iter()
        .filter(|r| !called(&r.pattern))
        .cloned()
        .collect()
}

#[test]
fn no_panic_probe_calls_every_public_function() {
    let required = all_requirements();
    let probe = probe_code();
    let gaps = missing(&required, &probe);
    assert!(
        gaps.is_empty(),
        "harness/no-panic/src does not call these public items of softmax-core, loss-core or \
         attention-core, so their panic freedom is unproven (add the calls, then run \
         harness/no-panic/check.sh):\n{}",
        gaps.iter()
            .map(|r| format!("  {:40} (from {})", r.pattern, r.origin))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The extraction finds what is known to be there, so the test above cannot pass because the
/// parser silently found nothing.
#[test]
fn extraction_finds_the_known_surface() {
    let required = all_requirements();
    let patterns: BTreeSet<&str> = required.iter().map(|r| r.pattern.as_str()).collect();
    for known in [
        "softmax_core::softmax(",
        "softmax_core::temperature_for_entropy(",
        "rows::softmax(",
        "rows::kl_divergence(",
        "array::softmax(",
        "array::logsumexp_rows(",
        "LogSumExp::new(",
        ".push_slice(",
        ".merge(",
        ".log_prob(",
        "Rows::new(",
        ".with_temperature(",
        ".temperature(",
        ".scaled_sum(",
        "B::exp(",
        "B::exp_shifted(",
        "B::ln(",
        "F::from_f64(",
        ".to_bits(",
        "with_backend::<f32, Poly>(",
        "with_backend::<f64, Libm>(",
        "with_backend::<f32, MicroMath>(",
        "float_only::<f64>(",
        "stored::row_bytes(",
        "S::store_row(",
        "S::check_row(",
        "S::write_row(",
        "within::matmul_nt_stored(",
        "within::matmul_nn_stored(",
    ] {
        assert!(
            patterns.contains(known),
            "extraction lost {known}; found {patterns:#?}"
        );
    }
    // Crate-internal items are not part of the surface.
    for internal in [
        "from_parts(",
        "hardmax_row(",
        "hardmax_in_place(",
        "check_len(",
        "of_row(",
    ] {
        assert!(
            !patterns.iter().any(|p| p.contains(internal)),
            "pub(crate) item {internal} extracted"
        );
    }
    // MicroMath is f32-only: no f64 driver is demanded for it.
    assert!(!patterns.contains("with_backend::<f64, MicroMath>("));
    assert!(required.len() >= 60, "only {} requirements", required.len());
}

/// The check fails when a call is missing, when it only appears in a comment, and when a new
/// public function appears in softmax-core.
#[test]
fn coverage_check_can_fail() {
    let required = all_requirements();
    let probe = probe_code();
    assert!(missing(&required, &probe).is_empty());

    let without = probe.replace("rows::kl_divergence(", "rows::kl_divergence_gone(");
    let gaps = missing(&required, &without);
    assert_eq!(
        gaps.iter().map(|r| r.pattern.as_str()).collect::<Vec<_>>(),
        ["rows::kl_divergence("]
    );

    let commented = probe.replace("used(rows::kl_divergence(", "// used(rows::kl_divergence(");
    assert!(!missing(&required, &commented).is_empty());

    // A turbofish call counts; a longer name that merely starts the same does not.
    let turbofish = requirements(
        "rows.rs",
        "pub fn typed<F>(n: usize) -> usize {\n    n\n}\n",
        "rows",
    );
    assert!(missing(&turbofish, "used(rows::typed::<f32>(3));").is_empty());
    assert_eq!(
        missing(&turbofish, "used(rows::typed_more::<f32>(3));").len(),
        1
    );

    let mut extended = required.clone();
    extended.extend(requirements(
        "rows.rs",
        "/// docs\npub fn brand_new<F>(x: &[F]) -> usize {\n    x.len()\n}\n",
        "rows",
    ));
    let gaps = missing(&extended, &probe);
    assert_eq!(
        gaps.iter().map(|r| r.pattern.as_str()).collect::<Vec<_>>(),
        ["rows::brand_new("]
    );

    // Methods and associated functions of a new impl block are found too.
    let extra = requirements(
        "lse.rs",
        "impl<F: Float> Thing<F> {\n    pub fn make(v: F) -> Self {\n        todo!()\n    }\n    \
         pub fn get(\n        &self,\n    ) -> F {\n        todo!()\n    }\n    \
         pub(crate) fn hidden(&self) {}\n}\n",
        "softmax_core",
    );
    let pats: Vec<&str> = extra.iter().map(|r| r.pattern.as_str()).collect();
    assert_eq!(pats, ["Thing::make(", ".get("]);
}
