//! Driving `harness conform` as outside checks do, for the conformance tests of the attention
//! and loss ops: the real binary, JSON lines on stdin, answers parsed back from its stdout.

use std::io::Write as _;
use std::process::{Command, Stdio};

use serde_json::{Map, Value};

/// Runs `harness conform` on the lines; asserts a clean exit, an empty stderr and one JSON
/// object answer per input line, and returns the answers in order.
pub fn run(lines: &[String]) -> Vec<Map<String, Value>> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("conform")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn harness conform");
    let mut stdin = child.stdin.take().expect("stdin pipe");
    let mut data = String::new();
    for l in lines {
        data.push_str(l);
        data.push('\n');
    }
    // Written from a thread: a large batch would otherwise fill the stdout pipe before stdin is
    // done.
    let writer = std::thread::spawn(move || stdin.write_all(data.as_bytes()));
    let out = child.wait_with_output().expect("wait for harness");
    writer.join().expect("writer thread").expect("write stdin");
    assert!(out.status.success(), "exit status {:?}", out.status);
    assert!(
        out.stderr.is_empty(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let answers: Vec<Map<String, Value>> = text
        .lines()
        .map(|raw| match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(m)) => m,
            _ => panic!("not a JSON object: {raw}"),
        })
        .collect();
    assert_eq!(answers.len(), lines.len(), "one answer per line");
    answers
}
