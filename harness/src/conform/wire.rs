//! Text-level work on protocol lines: the raw members of an input object (so that `id` is echoed
//! byte for byte and duplicate fields are caught), float formatting, and the answer lines.

use std::fmt::Write as _;

use super::request::Real;
use super::Failure;

/// The top-level members of a JSON object, as raw text spans `(key, value)` in input order
/// (the key span includes its quotes).
///
/// `text` must already have been accepted by `serde_json` as an object: the scanner relies on
/// that and does not validate. It never panics; if the text is somehow not what it expects it
/// returns `None` and the caller falls back to the parsed value. Iterative, so nesting depth
/// costs no stack.
pub(super) fn members(text: &str) -> Option<Vec<(&str, &str)>> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(b, i + 1);
    let mut out = Vec::new();
    if b.get(i) == Some(&b'}') {
        return Some(out);
    }
    loop {
        let key_end = string_end(b, i)?;
        let key = text.get(i..key_end)?;
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let v_start = skip_ws(b, i + 1);
        let v_end = value_end(b, v_start)?;
        out.push((key, text.get(v_start..v_end)?));
        i = skip_ws(b, v_end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return Some(out),
            _ => return None,
        }
    }
}

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|&c| is_ws(c)) {
        i += 1;
    }
    i
}

/// `b[i]` is the opening quote of a string; returns the index just past its closing quote.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        match b.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

/// Index just past the JSON value starting at `b[i]`.
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match b.get(j)? {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            // A number or a literal: runs to the next delimiter.
            let mut j = i;
            while b
                .get(j)
                .is_some_and(|&c| !is_ws(c) && !matches!(c, b',' | b'}' | b']'))
            {
                j += 1;
            }
            Some(j)
        }
    }
}

/// A raw JSON value with the insignificant whitespace removed (strings, numbers and literals
/// untouched), so that an echoed value stays on one line and keeps its exact text.
pub(super) fn minify(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in raw.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            if c == '"' {
                in_string = true;
            }
            out.push(c);
        }
    }
    out
}

/// Appends a float in the protocol's form: `"nan"`, `"inf"`, `"-inf"` as strings; otherwise a
/// JSON number with the shortest digits that parse back to the same value of `F` (Rust's
/// `Display`/`LowerExp` are shortest round-trip). Plain notation for 1e-5 <= |v| < 1e16 (and 0),
/// with a `.0` added to integral values so that every parser reads a float (in particular
/// `-0.0`, which e.g. Python's `json` would read as the integer 0, losing the sign);
/// exponent notation otherwise (`1e-45`, `3.4028235e38`).
pub(super) fn push_float<F: Real>(out: &mut String, v: F) {
    if v.is_nan() {
        out.push_str("\"nan\"");
    } else if v == F::INFINITY {
        out.push_str("\"inf\"");
    } else if v == F::NEG_INFINITY {
        out.push_str("\"-inf\"");
    } else {
        let a = v.abs();
        if a == F::ZERO || (a >= F::from_f64(1e-5) && a < F::from_f64(1e16)) {
            let start = out.len();
            let _ = write!(out, "{v}");
            if !out[start..].contains('.') {
                out.push_str(".0");
            }
        } else {
            let _ = write!(out, "{v:e}");
        }
    }
}

/// A JSON array of floats, formatted by [`push_float`].
pub(super) fn float_array<F: Real>(values: &[F]) -> String {
    let mut out = String::with_capacity(values.len() * 12 + 2);
    out.push('[');
    for (i, &v) in values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_float(&mut out, v);
    }
    out.push(']');
    out
}

/// `{"id":<id>,"ok":true,<name>:<value>,...}` with the values already JSON text.
pub(super) fn success_line(id: &str, outputs: &[(&str, String)]) -> String {
    let mut out =
        String::with_capacity(32 + outputs.iter().map(|(_, v)| v.len() + 8).sum::<usize>());
    out.push_str("{\"id\":");
    out.push_str(id);
    out.push_str(",\"ok\":true");
    for (name, value) in outputs {
        out.push_str(",\"");
        out.push_str(name);
        out.push_str("\":");
        out.push_str(value);
    }
    out.push('}');
    out
}

/// `{"id":<id>,"ok":false,"error":<kind>,"message":<message>}`.
pub(super) fn failure_line(id: &str, failure: &Failure) -> String {
    let message = serde_json::Value::String(failure.message.clone());
    format!(
        "{{\"id\":{id},\"ok\":false,\"error\":\"{}\",\"message\":{message}}}",
        failure.kind.as_str()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt<F: Real>(v: F) -> String {
        let mut s = String::new();
        push_float(&mut s, v);
        s
    }

    #[test]
    fn floats_are_json_and_shortest() {
        assert_eq!(fmt(-0.0f32), "-0.0");
        assert_eq!(fmt(0.0f64), "0.0");
        assert_eq!(fmt(1.0f32), "1.0");
        assert_eq!(fmt(0.1f32), "0.1");
        assert_eq!(fmt(1e-45f32), "1e-45");
        assert_eq!(fmt(f32::MAX), "3.4028235e38");
        assert_eq!(fmt(-f64::MAX), "-1.7976931348623157e308");
        assert_eq!(fmt(5e-324f64), "5e-324");
        assert_eq!(fmt(1e16f64), "1e16");
        assert_eq!(fmt(123456790.0f32), "123456790.0");
        assert_eq!(fmt(f32::NAN), "\"nan\"");
        assert_eq!(fmt(f64::INFINITY), "\"inf\"");
        assert_eq!(fmt(f32::NEG_INFINITY), "\"-inf\"");
        // Round trip over a bit sweep of f32, through the decimal text.
        for bits in (0u32..=u32::MAX).step_by(0x0001_2345) {
            let v = f32::from_bits(bits);
            if v.is_finite() {
                let s = fmt(v);
                assert_eq!(s.parse::<f32>().map(f32::to_bits), Ok(bits), "{s}");
                assert!(serde_json::from_str::<serde_json::Value>(&s).is_ok_and(|j| j.is_number()));
            }
        }
    }

    #[test]
    fn members_and_minify() {
        let text = r#" { "id" : [1, {"a": "x,}]\" y"}] ,"op":"softmax", "n":-1.5E+3 ,"t":true} "#;
        let m = members(text).unwrap();
        let keys: Vec<&str> = m.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ["\"id\"", "\"op\"", "\"n\"", "\"t\""]);
        assert_eq!(m[0].1, r#"[1, {"a": "x,}]\" y"}]"#);
        assert_eq!(minify(m[0].1), r#"[1,{"a":"x,}]\" y"}]"#);
        assert_eq!(m[2].1, "-1.5E+3");
        assert_eq!(m[3].1, "true");
        assert_eq!(members("{}").unwrap(), []);
        assert_eq!(members("[1]"), None);
        assert_eq!(members("{\"a\":"), None);
    }
}
