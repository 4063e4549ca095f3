//! `harness`: the demo (default), the conformance CLI (`conform`), and the speed table (`bench`).
//!
//! ```text
//! cargo run --release -p harness              # demo: the softmax family on the seeds' examples
//! cargo run --release -p harness -- conform   # JSON-lines protocol of harness/CONFORMANCE.md
//! cargo run --release -p harness -- bench     # the peer table (onnxruntime, candle, memory)
//! cargo run --release -p harness -- bench --quantized   # only the int8/int16 softmax rows
//! cargo run --release -p harness -- bench --kv          # only the KV-cache decode rows
//! cargo run --release -p harness -- bench --softmax     # only the softmax family's tables
//! ```

mod bench;
mod conform;
mod demo;
mod demo_attention;
mod demo_loss;

use std::io::{self, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None | Some("demo") => {
            let out = io::stdout();
            let mut out = out.lock();
            match demo::run(&mut out) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("harness: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("conform") => {
            let stdin = io::stdin();
            let out = io::stdout();
            let mut out = io::BufWriter::new(out.lock());
            match conform::run(stdin.lock(), &mut out).and_then(|()| out.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("harness conform: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("bench") => {
            let out = io::stdout();
            let fast = args.iter().skip(1).any(|a| a == "--quick");
            let flag = |f: &str| args.iter().skip(1).any(|a| a == f);
            let only = match (flag("--quantized"), flag("--kv"), flag("--softmax")) {
                (false, false, false) => bench::Only::All,
                (true, false, false) => bench::Only::Quantized,
                (false, true, false) => bench::Only::KvCache,
                (false, false, true) => bench::Only::Softmax,
                _ => {
                    eprintln!(
                        "harness bench: --quantized, --kv and --softmax each run one section; give one"
                    );
                    return ExitCode::FAILURE;
                }
            };
            match bench::run(&mut out.lock(), fast, only) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("harness bench: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("reproduce") => {
            // The seeds' claims, checked: the Markdown table of docs/seeds-claims.md.
            let doc = harness::reproduce::render();
            match args.get(1) {
                Some(path) => match std::fs::write(path, doc) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => {
                        eprintln!("harness reproduce: {path}: {e}");
                        ExitCode::FAILURE
                    }
                },
                None => {
                    print!("{doc}");
                    ExitCode::SUCCESS
                }
            }
        }
        Some("figures") => {
            // The README's figures: docs/figures/NAME.{json,svg}, computed by the kernels.
            let dir = args.get(1).map_or_else(
                || std::path::PathBuf::from("docs/figures"),
                std::path::PathBuf::from,
            );
            match harness::figures::write_all(&dir) {
                Ok(()) => {
                    println!("written to {}", dir.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("harness figures: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("-h" | "--help" | "help") => {
            println!(
                "usage: harness [demo | conform | bench [--quick] [--softmax | --quantized | --kv] | reproduce [FILE] | figures [DIR]]"
            );
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("harness: unknown command {other:?}; try `harness --help`");
            ExitCode::from(2)
        }
    }
}
