//! Driving `harness conform` as outside checks do, for the conformance tests: the real binary,
//! JSON lines on stdin, answers read back from its stdout.

use std::io::Write as _;
use std::process::{Command, Stdio};

use serde_json::{Map, Value};

/// Runs `harness conform` on raw input; asserts a clean exit (status 0, nothing on stderr, so no
/// panic message either) and a terminated last line, and returns the output lines.
pub fn run_bytes(input: &[u8]) -> Vec<String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("conform")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn harness conform");
    let mut stdin = child.stdin.take().expect("stdin pipe");
    let data = input.to_vec();
    // Write from another thread so a large input cannot deadlock against a full stdout pipe.
    let writer = std::thread::spawn(move || stdin.write_all(&data));
    let out = child.wait_with_output().expect("wait for harness");
    writer.join().expect("writer thread").expect("write stdin");
    assert!(
        out.status.success(),
        "exit status {:?}; stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("stdout is UTF-8");
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "last line unterminated"
    );
    text.lines().map(str::to_owned).collect()
}

/// Runs the lines (each sent newline-terminated); asserts one answer line per input line and
/// returns them in order.
pub fn run_lines(lines: &[String]) -> Vec<String> {
    let mut input = String::new();
    for l in lines {
        input.push_str(l);
        input.push('\n');
    }
    let out = run_bytes(input.as_bytes());
    assert_eq!(out.len(), lines.len(), "one answer per input line");
    out
}

/// [`run_lines`], each answer parsed as a JSON object.
#[allow(dead_code)] // conform.rs parses its answers itself
pub fn run(lines: &[String]) -> Vec<Map<String, Value>> {
    run_lines(lines)
        .iter()
        .map(|raw| match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(m)) => m,
            _ => panic!("not a JSON object: {raw}"),
        })
        .collect()
}
