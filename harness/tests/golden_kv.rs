//! Golden vectors for the reduced-precision KV cache formats (`kv_dtype` f16, bf16, int8):
//! `harness/golden/kv_readback.json`, written by `harness/golden/gen_kv.py` from numpy alone
//! (f16 and bf16 rounded on the float32 bit patterns, int8 per CONFORMANCE.md in np.float32
//! arithmetic, each operation checked there against exact rationals).
//!
//! For every row of the file, exactly:
//!
//! * softmax-core's `Stored::store_row` followed by `Operand::load` gives the recorded
//!   read-back bits (and, for int8, the recorded scale bits and integers), or
//!   `Error::NotStorable` where the file says "not storable", then writing nothing;
//! * attention-core's KV cache of that format accepts the row as a token's keys and as its
//!   values, or refuses it with `Error::NotStorable { what: "k" | "v" }` and stays empty; an
//!   accepted value row, attended by the one query that weighs it 1, comes back as the recorded
//!   read-back values (the weighted sum starts from +0, so a stored −0 comes back +0: zeros
//!   are compared by value, everything else by bits).

use attention_core::backend::Poly;
use attention_core::softmax_core::stored::{bf16, f16, Operand, Stored};
use attention_core::{DecodeOptions, Element, Error as AttnError, KvCacheSlice, Output};
use serde_json::Value;
use softmax_core::Error;

/// One row of the file; `None` where the format cannot store it.
struct Row {
    name: String,
    class: String,
    x: Vec<f32>,
    f16: Option<Vec<u32>>,
    bf16: Option<Vec<u32>>,
    /// Scale bits, integers, read-back bits.
    int8: Option<(u32, Vec<i8>, Vec<u32>)>,
}

fn bits(v: &Value) -> u32 {
    let s = v.as_str().expect("a bit pattern string");
    let hex = s.strip_prefix("0x").expect("0x…");
    assert_eq!(hex.len(), 8, "{s}");
    u32::from_str_radix(hex, 16).expect("hex")
}

fn bit_list(v: &Value) -> Vec<u32> {
    v.as_array().expect("array").iter().map(bits).collect()
}

/// The format's entry: `None` for "not storable".
fn entry(row: &Value, fmt: &str) -> Option<Value> {
    match &row[fmt] {
        Value::String(s) => {
            assert_eq!(s, "not storable", "{fmt}");
            None
        }
        v @ Value::Object(_) => Some(v.clone()),
        other => panic!("{fmt}: {other}"),
    }
}

fn rows() -> Vec<Row> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/golden/kv_readback.json");
    let text = std::fs::read_to_string(path).expect("kv_readback.json");
    let doc: Value = serde_json::from_str(&text).expect("JSON");
    let rows: Vec<Row> = doc["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            let x: Vec<f32> = bit_list(&r["x"]).into_iter().map(f32::from_bits).collect();
            let read = |fmt: &str| entry(r, fmt).map(|e| bit_list(&e["read"]));
            let int8 = entry(r, "int8").map(|e| {
                let q = e["q"]
                    .as_array()
                    .expect("q")
                    .iter()
                    .map(|v| i8::try_from(v.as_i64().expect("integer")).expect("i8"))
                    .collect();
                (bits(&e["scale"]), q, bit_list(&e["read"]))
            });
            let row = Row {
                name: r["name"].as_str().expect("name").to_string(),
                class: r["class"].as_str().expect("class").to_string(),
                x,
                f16: read("f16"),
                bf16: read("bf16"),
                int8,
            };
            for n in [
                row.f16.as_ref().map(Vec::len),
                row.bf16.as_ref().map(Vec::len),
                row.int8.as_ref().map(|i| i.1.len()),
                row.int8.as_ref().map(|i| i.2.len()),
            ]
            .into_iter()
            .flatten()
            {
                assert_eq!(n, row.x.len(), "{}", row.name);
            }
            row
        })
        .collect();
    assert_eq!(
        doc["meta"]["rows"].as_u64(),
        Some(rows.len() as u64),
        "meta.rows"
    );
    rows
}

/// The file covers what it says it covers: every class, and rows each format refuses.
#[test]
fn the_file_covers_its_classes() {
    let rows = rows();
    for class in [
        "normal",
        "dynamic_range",
        "random_bits",
        "f16_subnormal",
        "f16_overflow",
        "f16_ties",
        "bf16_ties",
        "bf16_max",
        "int8_ties",
        "zeros",
        "signed_zeros",
        "tiny_amax",
        "huge",
        "nonfinite",
    ] {
        assert!(rows.iter().any(|r| r.class == class), "no {class} rows");
    }
    let normal: Vec<usize> = rows
        .iter()
        .filter(|r| r.class == "normal")
        .map(|r| r.x.len())
        .collect();
    assert_eq!(normal, (1..=130).collect::<Vec<_>>());
    let refused = |f: fn(&Row) -> bool| rows.iter().filter(|r| f(r)).count();
    assert!(refused(|r| r.f16.is_none() && r.x.iter().all(|v| v.is_finite())) >= 10);
    assert!(refused(|r| r.bf16.is_none() && r.x.iter().all(|v| v.is_finite())) >= 5);
    assert!(refused(|r| r.int8.is_none()) >= 12);
    // The boundaries, by name.
    let get = |name: &str| {
        rows.iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("no row {name}"))
    };
    assert!(get("f16_overflow/65519.996").f16.is_some());
    assert!(get("f16_overflow/65520").f16.is_none());
    assert!(get("bf16_max/0x7f7f7fff_below_tie").bf16.is_some());
    assert!(get("bf16_max/0x7f7f8000_tie_to_inf").bf16.is_none());
    // int8 of f32's largest value: 127·s rounds past it, the read-back is +inf.
    let (_, q, read) = get("huge/f32_max").int8.clone().expect("int8 stores it");
    assert_eq!((q[0], read[0]), (127, f32::INFINITY.to_bits()));
}

/// `store_row` + `load` for a format without a scale (f16, bf16).
fn check_float_format<E>(row: &Row, want: Option<&Vec<u32>>, sentinel: E, fmt: &str)
where
    E: Stored + Operand<f32, Scale = ()> + PartialEq,
{
    let name = &row.name;
    let mut out = vec![sentinel; row.x.len()];
    match (E::store_row(&row.x, &mut out), want) {
        (Ok(()), Some(read)) => {
            assert_eq!(E::check_row(&row.x), Ok(()), "{name} {fmt}");
            for (i, (e, &w)) in out.iter().zip(read).enumerate() {
                assert_eq!(
                    e.load(()).to_bits(),
                    w,
                    "{name} {fmt}[{i}]: x = {:e} ({:#010x}): read back {:e}, golden {:e}",
                    row.x[i],
                    row.x[i].to_bits(),
                    e.load(()),
                    f32::from_bits(w)
                );
            }
        }
        (Err(Error::NotStorable), None) => {
            assert_eq!(
                E::check_row(&row.x),
                Err(Error::NotStorable),
                "{name} {fmt}"
            );
            assert!(out.iter().all(|e| *e == sentinel), "{name} {fmt}: wrote");
        }
        (got, want) => panic!(
            "{name} {fmt}: store_row gives {got:?}, the file says {}",
            if want.is_some() {
                "storable"
            } else {
                "not storable"
            }
        ),
    }
}

#[test]
fn softmax_core_store_row_and_load_give_the_golden_bits() {
    let rows = rows();
    let mut values = 0usize;
    for row in &rows {
        check_float_format(row, row.f16.as_ref(), f16::from_bits(0x5555), "f16");
        check_float_format(row, row.bf16.as_ref(), bf16::from_bits(0x5555), "bf16");
        let name = &row.name;
        let mut q = vec![99i8; row.x.len()];
        match (<i8 as Stored>::store_row(&row.x, &mut q), &row.int8) {
            (Ok(s), Some((scale, want_q, read))) => {
                assert_eq!(s.to_bits(), *scale, "{name} int8 scale: {s:e}");
                assert_eq!(&q, want_q, "{name} int8 q");
                for (i, (&qi, &w)) in q.iter().zip(read).enumerate() {
                    assert_eq!(qi.load(s).to_bits(), w, "{name} int8[{i}]");
                }
            }
            (Err(Error::NotStorable), None) => {
                assert!(q.iter().all(|&v| v == 99), "{name} int8: wrote");
            }
            (got, want) => panic!("{name} int8: store_row gives {got:?}, the file {want:?}"),
        }
        values += row.x.len();
    }
    eprintln!("{} rows, {values} values, 3 formats", rows.len());
}

/// A KV cache of `E` (fresh pair from `make`): pushes the row as keys, then (into the other
/// cache) as values; an accepted value row is read back through `attend`.
fn check_cache<E: Element<Float = f32>>(
    row: &Row,
    want: Option<&Vec<u32>>,
    k_cache: &mut KvCacheSlice<'_, E>,
    v_cache: &mut KvCacheSlice<'_, E>,
) {
    let (name, fmt, n) = (&row.name, E::NAME, row.x.len());
    let zeros = vec![0.0f32; n];
    let pushed_k = k_cache.push(&row.x, &zeros);
    let pushed_v = v_cache.push(&zeros, &row.x);
    let Some(read) = want else {
        assert_eq!(
            pushed_k,
            Err(AttnError::NotStorable { what: "k" }),
            "{name} {fmt} k"
        );
        assert_eq!(
            pushed_v,
            Err(AttnError::NotStorable { what: "v" }),
            "{name} {fmt} v"
        );
        assert!(k_cache.is_empty() && v_cache.is_empty(), "{name} {fmt}");
        return;
    };
    assert_eq!(pushed_k, Ok(()), "{name} {fmt} k");
    assert_eq!(pushed_v, Ok(()), "{name} {fmt} v");
    // One key, score 0: weight exactly 1, `o` is the stored value row read back.
    let mut o = vec![f32::NAN; n];
    v_cache
        .attend(Poly, &zeros, &DecodeOptions::new(), Output::new(&mut o))
        .expect("attend");
    for (i, (&got, &w)) in o.iter().zip(read).enumerate() {
        let w = f32::from_bits(w);
        let same = if w == 0.0 {
            got == 0.0
        } else {
            got.to_bits() == w.to_bits()
        };
        assert!(
            same,
            "{name} {fmt} v[{i}]: attend gives {got:e}, golden {w:e}"
        );
    }
}

fn float_cache<E>(row: &Row, want: Option<&Vec<u32>>)
where
    E: Element<Float = f32, Unit = E> + Operand<f32, Scale = ()>,
{
    let n = row.x.len();
    let (mut a, mut b, mut c, mut d) = (
        vec![E::default(); n],
        vec![E::default(); n],
        vec![E::default(); n],
        vec![E::default(); n],
    );
    let mut kc = KvCacheSlice::new(&mut a, &mut b, 1, n, n, None).expect("cache");
    let mut vc = KvCacheSlice::new(&mut c, &mut d, 1, n, n, None).expect("cache");
    check_cache(row, want, &mut kc, &mut vc);
}

#[test]
fn kv_cache_push_accepts_and_rejects_the_same_rows() {
    let rows = rows();
    for row in &rows {
        let n = row.x.len();
        float_cache::<f16>(row, row.f16.as_ref());
        float_cache::<bf16>(row, row.bf16.as_ref());
        let int8_read = row.int8.as_ref().map(|(_, _, read)| read.clone());
        let (mut a, mut b, mut c, mut d) = (vec![0i8; n], vec![0i8; n], vec![0i8; n], vec![0i8; n]);
        let (mut sa, mut sb, mut sc, mut sd) = ([0f32], [0f32], [0f32], [0f32]);
        let mut kc =
            KvCacheSlice::new_int8(&mut a, &mut b, &mut sa, &mut sb, 1, n, n, None).expect("cache");
        let mut vc =
            KvCacheSlice::new_int8(&mut c, &mut d, &mut sc, &mut sd, 1, n, n, None).expect("cache");
        check_cache(row, int8_read.as_ref(), &mut kc, &mut vc);
        // The f32 cache stores every row as it is, NaN and ±inf included.
        let bits: Vec<u32> = row.x.iter().map(|v| v.to_bits()).collect();
        let (mut a, mut b) = (vec![0f32; n], vec![0f32; n]);
        {
            let mut fc = KvCacheSlice::new(&mut a, &mut b, 1, n, n, None).expect("cache");
            assert_eq!(fc.push(&row.x, &row.x), Ok(()), "{} f32", row.name);
        }
        assert_eq!(a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), bits);
        assert_eq!(b.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), bits);
    }
}
