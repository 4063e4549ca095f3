//! softmax-core's quantized softmax (`quant`) against three independent things:
//!
//! * CMSIS-NN's committed unit-test vectors (`harness/golden/cmsis_nn_softmax.json`, copied from
//!   CMSIS-NN's `Tests/UnitTest/TestCases/TestData/softmax*` by `gen_cmsis_nn.py`; produced by the
//!   TensorFlow Lite interpreter): outputs equal, n/n, from the headers' integer parameters —
//!   and, for the int8 case whose input scale is known (f32(1/255), β = 1), the parameters
//!   themselves from Prepare;
//! * LiteRT's reference interpreter on random one-op models
//!   (`harness/golden/softmax_quantized_litert.json`, `gen_quantized_litert.py`): every int8-input
//!   row equal; int16 rows equal, except rows where LiteRT's two documented departures from TFLM
//!   (its f64-built 1/(1+x) table, its f32 product s·β) change the answer — each such row must then
//!   equal this crate's kernel run with LiteRT's table and multiplier, so that every row is
//!   explained, and the count of them is printed;
//! * the lookup tables rebuilt here from TFLM's `LUTPopulateInt16<float>` algorithm with two exps
//!   (the platform's `f32::exp` and the `libm` crate's `expf`), and CMSIS-NN's committed tables;
//!
//! plus the fixed-point exp and reciprocal against f64 over their whole input range, and the
//! edge cases TFLM has no answer for (errors) or a defined but easily-missed one.

mod conform_support;

use serde_json::Value;
use softmax_core::quant::{
    fixed, quantize_multiplier, softmax_s16, softmax_s8, softmax_s8_s16, S16Params, S8Params,
    EXP_LUT, ONE_OVER_ONE_PLUS_X_LUT,
};
use softmax_core::Error;

fn load(name: &str) -> Value {
    let path = format!("{}/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn ints(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

/// An f32 written as its shortest round-trip decimal.
fn f32_of(v: &Value) -> f32 {
    v.to_string().parse::<f32>().unwrap()
}

/// TFLM's `LUTPopulateInt16<FloatT>` (tensorflow/lite/kernels/internal/common.h), generic over
/// the float type, with `round` half away from zero as `TfLiteRound`.
trait LutFloat: Copy + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self> {
    fn from_i32(v: i32) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn round(self) -> Self;
    fn clamp_i16(self) -> i16;
}

impl LutFloat for f32 {
    fn from_i32(v: i32) -> f32 {
        v as f32
    }
    fn mul(self, o: f32) -> f32 {
        self * o
    }
    fn div(self, o: f32) -> f32 {
        self / o
    }
    fn round(self) -> f32 {
        f32::round(self)
    }
    fn clamp_i16(self) -> i16 {
        self.clamp(-32768.0, 32767.0) as i16
    }
}

impl LutFloat for f64 {
    fn from_i32(v: i32) -> f64 {
        v as f64
    }
    fn mul(self, o: f64) -> f64 {
        self * o
    }
    fn div(self, o: f64) -> f64 {
        self / o
    }
    fn round(self) -> f64 {
        f64::round(self)
    }
    fn clamp_i16(self) -> i16 {
        self.clamp(-32768.0, 32767.0) as i16
    }
}

fn lut_populate<F: LutFloat>(
    input_scale: F,
    input_zero_point: i32,
    output_scale: F,
    f: impl Fn(F) -> F,
) -> [i16; 513] {
    let c = F::from_i32;
    let input_min = input_scale.mul(c(-32768 - input_zero_point));
    let input_max = input_scale.mul(c(32767 - input_zero_point));
    let output_min = output_scale.mul(c(-32768));
    let output_max = output_scale.mul(c(32767));
    let step = (input_max - input_min).div(c(512));
    let half_step = step.div(c(2));
    let inv = c(65536).div(output_max - output_min);
    let mut lut = [0i16; 513];
    for (i, entry) in lut.iter_mut().take(512).enumerate() {
        let i = i as i32;
        let val = f(input_min + c(i).mul(step));
        let val_midpoint = f(input_min + c(i).mul(step) + half_step);
        let val_next = f(input_min + c(i + 1).mul(step));
        let sample_val = val.mul(inv).round();
        let midpoint_interp_val = (val_next.mul(inv) + val.mul(inv).round()).div(c(2)).round();
        let midpoint_val = val_midpoint.mul(inv).round();
        let bias = (midpoint_interp_val - midpoint_val).div(c(2)).round();
        *entry = (sample_val - bias).clamp_i16();
    }
    lut[512] = f(input_max).mul(inv).round().clamp_i16();
    lut
}

/// TFLM's two tables as its Prepare builds them (float32), with the given exp.
fn tflm_tables(exp: impl Fn(f32) -> f32) -> ([i16; 513], [i16; 513]) {
    let range = 65535.0f32;
    (
        lut_populate(10.0f32 / range, 32767, 2.0 / range, exp),
        lut_populate(1.0f32 / range, -32768, 2.0 / range, |v| 1.0 / (1.0 + v)),
    )
}

#[test]
fn lookup_tables_are_tflms_and_cmsis_nns() {
    let (exp_std, recip) = tflm_tables(f32::exp);
    let (exp_libm, _) = tflm_tables(libm::expf);
    assert_eq!(
        EXP_LUT, exp_std,
        "TFLM's exp table, rebuilt with the platform's expf"
    );
    assert_eq!(
        EXP_LUT, exp_libm,
        "TFLM's exp table, rebuilt with libm's expf"
    );
    assert_eq!(ONE_OVER_ONE_PLUS_X_LUT, recip);
    let cmsis = load("cmsis_nn_softmax.json");
    assert_eq!(ints(&cmsis["exp_lut"]), EXP_LUT.map(i64::from).to_vec());
    assert_eq!(
        ints(&cmsis["one_by_one_lut"]),
        ONE_OVER_ONE_PLUS_X_LUT.map(i64::from).to_vec()
    );
    // TensorFlow Lite (not Micro) builds the tables in f64: the exp table agrees, the reciprocal
    // table differs at exactly two entries (the difference this file's LiteRT test accounts for).
    let (exp64, recip64) = litert_tables();
    assert_eq!(exp64, EXP_LUT);
    let differ: Vec<usize> = (0..513)
        .filter(|&i| recip64[i] != ONE_OVER_ONE_PLUS_X_LUT[i])
        .collect();
    assert_eq!(differ, [160, 294]);
}

/// TensorFlow Lite's int16 tables: the same algorithm in f64.
fn litert_tables() -> ([i16; 513], [i16; 513]) {
    let range = 65535.0f64;
    (
        lut_populate(10.0 / range, 32767, 2.0 / range, f64::exp),
        lut_populate(1.0 / range, -32768, 2.0 / range, |v| 1.0 / (1.0 + v)),
    )
}

#[test]
fn cmsis_nn_vectors_match_exactly() {
    let cmsis = load("cmsis_nn_softmax.json");
    let mut matched = 0;
    for case in cmsis["cases"].as_array().unwrap() {
        let n = case["row_size"].as_u64().unwrap() as usize;
        let mult = case["input_multiplier"].as_i64().unwrap() as i32;
        let shift = case["input_left_shift"].as_i64().unwrap() as i32;
        let x = ints(&case["x"]);
        let want = ints(&case["y"]);
        let got: Vec<i64> = match case["kernel"].as_str().unwrap() {
            "arm_softmax_s8" | "arm_softmax_s8_s16" => {
                let p = S8Params::from_raw(mult, shift, case["diff_min"].as_i64().unwrap() as i32)
                    .unwrap();
                let x: Vec<i8> = x.iter().map(|&v| v as i8).collect();
                let mut scratch = vec![0; n];
                if case["output_type"] == "int8" {
                    let mut y = vec![0i8; x.len()];
                    softmax_s8(&p, &x, n, &mut scratch, &mut y).unwrap();
                    y.iter().map(|&v| v as i64).collect()
                } else {
                    let mut y = vec![0i16; x.len()];
                    softmax_s8_s16(&p, &x, n, &mut scratch, &mut y).unwrap();
                    y.iter().map(|&v| v as i64).collect()
                }
            }
            "arm_softmax_s16" => {
                let p = S16Params::from_raw(mult, shift).unwrap();
                let x: Vec<i16> = x.iter().map(|&v| v as i16).collect();
                let mut y = vec![0i16; x.len()];
                softmax_s16(&p, &x, n, &mut y).unwrap();
                y.iter().map(|&v| v as i64).collect()
            }
            k => panic!("unknown kernel {k}"),
        };
        assert_eq!(got, want, "{}", case["kernel"]);
        matched += want.len();
    }
    // The int8 case's header parameters are Prepare's for input scale f32(1/255), β = 1.
    let p = S8Params::prepare(1.0 / 255.0, 1.0).unwrap();
    assert_eq!(
        (p.input_multiplier(), p.input_left_shift(), p.diff_min()),
        (1_077_952_640, 19, -3968)
    );
    println!("CMSIS-NN: {matched}/{matched} values equal (3 kernels)");
}

/// LiteRT's int16 Prepare: `input->params.scale * params->beta` is a float product, then divided
/// in double (TensorFlow Lite's activations.cc), where TFLM multiplies in double.
fn litert_s16_params<'t>(s: f32, beta: f32, tables: &'t ([i16; 513], [i16; 513])) -> S16Params<'t> {
    let (m, shift) = quantize_multiplier((s * beta) as f64 / (10.0 / 65535.0)).unwrap();
    S16Params::from_raw(m, shift)
        .unwrap()
        .with_tables(&tables.0, &tables.1)
}

#[test]
fn litert_reference_interpreter_matches() {
    let golden = load("softmax_quantized_litert.json");
    let litert_tables = litert_tables();
    let (mut rows8, mut rows8_16, mut rows16, mut values) = (0usize, 0usize, 0usize, 0usize);
    // Rows whose answer differs from TFLM's, by which departure explains them: LiteRT's table
    // alone, its multiplier alone, only both together.
    let (mut by_table, mut by_multiplier, mut by_both) = (0usize, 0usize, 0usize);
    let tflm_tables = (EXP_LUT, ONE_OVER_ONE_PLUS_X_LUT);
    for (ci, case) in golden["cases"].as_array().unwrap().iter().enumerate() {
        let shape = ints(&case["shape"]);
        let (r, n) = (shape[0] as usize, shape[1] as usize);
        let (s, beta) = (f32_of(&case["input_scale"]), f32_of(&case["beta"]));
        let x = ints(&case["x"]);
        let want = ints(&case["y"]);
        values += want.len();
        match (
            case["input_type"].as_str().unwrap(),
            case["output_type"].as_str().unwrap(),
        ) {
            ("int8", out) => {
                let p = S8Params::prepare(s, beta).unwrap();
                let x: Vec<i8> = x.iter().map(|&v| v as i8).collect();
                let mut scratch = vec![0; n];
                let got: Vec<i64> = if out == "int8" {
                    rows8 += r;
                    let mut y = vec![0i8; x.len()];
                    softmax_s8(&p, &x, n, &mut scratch, &mut y).unwrap();
                    y.iter().map(|&v| v as i64).collect()
                } else {
                    rows8_16 += r;
                    let mut y = vec![0i16; x.len()];
                    softmax_s8_s16(&p, &x, n, &mut scratch, &mut y).unwrap();
                    y.iter().map(|&v| v as i64).collect()
                };
                assert_eq!(got, want, "case {ci}: int8 → {out}, s {s}, β {beta}");
            }
            ("int16", "int16") => {
                rows16 += r;
                let x: Vec<i16> = x.iter().map(|&v| v as i16).collect();
                let tflm = S16Params::prepare(s, beta).unwrap();
                let litert = litert_s16_params(s, beta, &litert_tables);
                let table_only = tflm.with_tables(&litert_tables.0, &litert_tables.1);
                let multiplier_only = litert_s16_params(s, beta, &tflm_tables);
                let run = |p: &S16Params, row: &[i16]| -> Vec<i64> {
                    let mut y = vec![0i16; n];
                    softmax_s16(p, row, n, &mut y).unwrap();
                    y.iter().map(|&v| v as i64).collect()
                };
                for (row, want) in x.chunks(n).zip(want.chunks(n)) {
                    if run(&tflm, row) != want {
                        assert_eq!(
                            run(&litert, row),
                            want,
                            "case {ci}: an int16 row that even LiteRT's tables and multiplier do not explain"
                        );
                        if run(&table_only, row) == want {
                            by_table += 1;
                        } else if run(&multiplier_only, row) == want {
                            by_multiplier += 1;
                        } else {
                            by_both += 1;
                        }
                    }
                }
            }
            other => panic!("unexpected type pair {other:?}"),
        }
    }
    assert!(rows8 >= 1500 && rows8_16 >= 1500 && rows16 >= 29_000);
    let differ = by_table + by_multiplier + by_both;
    println!(
        "LiteRT: int8→int8 {rows8} rows, int8→int16 {rows8_16} rows equal; int16 {} of {rows16} rows \
         equal TFLM's answer, the other {differ} equal LiteRT's own (f64 1/(1+x) table: {by_table}, \
         f32 s·β: {by_multiplier}, both: {by_both}); {values} values",
        rows16 - differ
    );
}

#[test]
fn fixed_point_exp_and_reciprocal_against_f64() {
    // exp over the whole Q5.26 range the softmax uses, [−31, 0], every 997th step plus the
    // multiples of 1/4 (the barrel shifter's joints).
    let mut worst_abs = 0f64;
    let mut a = 0i64;
    while a >= -(31i64 << 26) {
        for v in [a, a - (a.rem_euclid(1 << 24))] {
            let got = fixed::exp_on_negative_values_q5_26(v as i32) as f64 / 2f64.powi(31);
            let want = (v as f64 / 2f64.powi(26)).exp();
            worst_abs = worst_abs.max((got - want).abs());
        }
        a -= 997;
    }
    // The bound: the Taylor polynomial's remainder on [−1/4, 0) around −1/8, (1/8)⁵/5! =
    // 2.54e-7 (times barrel factors <= 1), plus about a dozen roundings of 2⁻³² (the products)
    // and the barrel constants' own rounding (2⁻³² each, times results <= 1): 2.65e-7.
    assert!(worst_abs <= 2.65e-7, "worst absolute error {worst_abs:e}");
    let mut worst_rel = 0f64;
    for k in 0..200_000i64 {
        let a = (k * 10_737) as i32; // [0, 1) in Q0.31
        let got = fixed::one_over_one_plus_x_for_x_in_0_1(a) as f64 / 2f64.powi(31);
        let want = 1.0 / (1.0 + a as f64 / 2f64.powi(31));
        worst_rel = worst_rel.max((got - want).abs() / want);
    }
    assert!(
        worst_rel < 1e-8,
        "worst relative error of 1/(1+x) {worst_rel:e}"
    );
    println!("fixed-point exp: worst absolute error {worst_abs:.3e}; 1/(1+x): worst relative {worst_rel:.3e}");
}

/// gemmlowp's `SaturatingRoundingDoublingHighMul` as its C++ reads: a sign-dependent nudge and
/// a truncating division (the crate computes it as one floor shift).
fn gemmlowp_srdhm(a: i32, b: i32) -> i32 {
    if a == b && a == i32::MIN {
        return i32::MAX;
    }
    let ab = a as i64 * b as i64;
    let nudge: i64 = if ab >= 0 { 1 << 30 } else { 1 - (1 << 30) };
    ((ab + nudge) / (1i64 << 31)) as i32
}

#[test]
fn primitives_match_their_definitions() {
    // SRDHM against gemmlowp's statement, on operands of every magnitude (random bits shifted
    // right by a random amount) and on the edge values below.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..1_000_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let a = (state as i32) >> (state >> 59);
        let b = ((state >> 32) as i32) >> ((state >> 54) & 31);
        assert_eq!(
            fixed::saturating_rounding_doubling_high_mul(a, b),
            gemmlowp_srdhm(a, b),
            "{a}·{b}"
        );
    }
    // No argument panics (debug builds check overflow): the extreme integer-digit count.
    assert_eq!(
        fixed::get_reciprocal(1, i32::MIN).1,
        i32::MIN.wrapping_sub(31)
    );
    // SRDHM and RoundingDivideByPOT on edge values: gemmlowp's statement / the exact rational.
    let samples = [
        i32::MIN,
        i32::MIN + 1,
        -1 << 30,
        -12345,
        -2,
        -1,
        0,
        1,
        2,
        3,
        12345,
        1 << 30,
        i32::MAX - 1,
        i32::MAX,
    ];
    for &a in &samples {
        for &b in &samples {
            assert_eq!(
                fixed::saturating_rounding_doubling_high_mul(a, b),
                gemmlowp_srdhm(a, b),
                "{a}·{b}"
            );
        }
        for e in 0..32u32 {
            let exact = a as f64 / 2f64.powi(e as i32);
            let want = if exact < 0.0 {
                -(-exact + 0.5).floor()
            } else {
                (exact + 0.5).floor()
            };
            assert_eq!(
                fixed::rounding_divide_by_pot(a, e) as f64,
                want,
                "{a} / 2^{e}"
            );
        }
    }
}

#[test]
fn prepare_matches_tflm_formulas() {
    // QuantizeMultiplier: the exactly-2³¹ rounding case (fraction 1 − 2⁻³³ rounds up → halved).
    let just_below_one = 1.0 - 2f64.powi(-33);
    assert_eq!(quantize_multiplier(just_below_one).unwrap(), (1 << 30, 1));
    assert_eq!(quantize_multiplier(-0.75).unwrap(), (-(3 << 29), 0));
    assert_eq!(quantize_multiplier(2f64.powi(-40)).unwrap(), (0, 0));
    assert_eq!(
        quantize_multiplier(f64::NAN),
        Err(Error::InvalidQuantization)
    );
    // int8 Prepare, against the formula written out in f64 for a sweep of scales and betas.
    for i in 0..2000 {
        let s = (2f64.powi(-12) * 1.0045f64.powi(i)) as f32;
        for beta in [1.0f32, 0.5, 2.0, 0.37] {
            let real = (beta as f64 * s as f64 * 67_108_864.0).min(2_147_483_647.0);
            match S8Params::prepare(s, beta) {
                Ok(p) => {
                    assert!(real > 1.0);
                    let m = p.input_multiplier() as f64 * 2f64.powi(p.input_left_shift() - 31);
                    assert!((m - real).abs() <= real * 2f64.powi(-31), "{s} {beta}");
                    let radius = (31.0 * 2f64.powi(26) / 2f64.powi(p.input_left_shift())).floor();
                    assert_eq!(p.diff_min(), -(radius as i32));
                }
                Err(e) => {
                    assert_eq!(e, Error::InvalidQuantization);
                    assert!(real <= 1.0, "{s} {beta}");
                }
            }
        }
    }
    // The cap: a huge β·s gives the multiplier 2³¹ − 1 at shift 31 and diff_min 0.
    let p = S8Params::prepare(1000.0, 1000.0).unwrap();
    assert_eq!(
        (p.input_multiplier(), p.input_left_shift(), p.diff_min()),
        (i32::MAX, 31, 0)
    );
    // int16: the shift limit. s·β/(10/65535) < 2¹⁵ passes, the next power of two fails.
    // 2¹⁵·10/65535 = 5.00008: 5.0 is the last f32 multiple of 1/1000 below it.
    assert_eq!(S16Params::prepare(5.0, 1.0).unwrap().input_left_shift(), 15);
    assert_eq!(
        S16Params::prepare(5.001, 1.0),
        Err(Error::InvalidQuantization)
    );
    for bad in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        assert_eq!(S8Params::prepare(bad, 1.0), Err(Error::InvalidQuantization));
        assert_eq!(S8Params::prepare(0.1, bad), Err(Error::InvalidQuantization));
        assert_eq!(
            S16Params::prepare(bad, 1.0),
            Err(Error::InvalidQuantization)
        );
    }
}

#[test]
fn edges_tflm_defines() {
    let p8 = S8Params::prepare(1.0 / 255.0, 1.0).unwrap();
    let p16 = S16Params::prepare(1.0 / 4096.0, 1.0).unwrap();
    let mut scratch = [0i32; 512];
    // One value: probability one, clamped to the output type's maximum: 128 → 127 (int8),
    // 65536 − 32768 = 32768 → 32767 (int16 from int8), 32768 → 32767 (int16).
    let mut y8 = [0i8; 1];
    softmax_s8(&p8, &[-128], 1, &mut scratch, &mut y8).unwrap();
    assert_eq!(y8, [127]);
    let mut y16 = [0i16; 1];
    softmax_s8_s16(&p8, &[5], 1, &mut scratch, &mut y16).unwrap();
    assert_eq!(y16, [32767]);
    softmax_s16(&p16, &[-32768], 1, &mut y16).unwrap();
    assert_eq!(y16, [32767]); // CMSIS-NN's arm_softmax_s16 gives −32768 here
                              // All-equal rows: 1/n each, the same for every value of the constant.
    for v in [-128i8, 0, 127] {
        let mut y = [0i8; 4];
        softmax_s8(&p8, &[v; 4], 4, &mut scratch, &mut y).unwrap();
        assert_eq!(y, [-64; 4]); // 64/256
    }
    for v in [-32768i16, 0, 32767] {
        let mut y = [0i16; 4];
        softmax_s16(&p16, &[v; 4], 4, &mut y).unwrap();
        assert_eq!(y, [8192; 4]); // 1/4 in Q0.15
    }
    // Extremes in one row: the minimum's difference −255 is below diff_min at a large scale.
    let big = S8Params::prepare(0.5, 1.0).unwrap();
    let mut y = [0i8; 2];
    softmax_s8(&big, &[127, -128], 2, &mut scratch, &mut y).unwrap();
    assert_eq!(y, [127, -128]);
}

#[test]
fn rows_tflm_has_no_answer_for_are_errors() {
    let p8 = S8Params::prepare(1.0 / 255.0, 1.0).unwrap();
    // int8 output: the Q12.19 sum reaches 2²⁸ at 512 values equal to the row's maximum.
    let mut scratch = vec![0i32; 4096];
    let x = vec![7i8; 512];
    let mut y = vec![0i8; 512];
    assert_eq!(
        softmax_s8(&p8, &x, 512, &mut scratch, &mut y),
        Err(Error::QuantizedSumOverflow)
    );
    // 511 of them still have an answer: 1/511 of 256 quanta rounds to 1 → −128 + 1.
    softmax_s8(&p8, &x[..511], 511, &mut scratch, &mut y[..511]).unwrap();
    assert!(y[..511].iter().all(|&v| v == -127), "{:?}", &y[..4]);
    // int16 output has an answer up to the Q12.19 accumulator: 4095 values fit, 4096 overflow.
    let x = vec![0i8; 4096];
    let mut y = vec![0i16; 4096];
    softmax_s8_s16(&p8, &x[..4095], 4095, &mut scratch, &mut y[..4095]).unwrap();
    assert_eq!(
        softmax_s8_s16(&p8, &x, 4096, &mut scratch, &mut y),
        Err(Error::QuantizedSumOverflow)
    );
    // int16 input: the table gives exp(0) = 32762, and 65549 of them overflow the int32 sum.
    let p16 = S16Params::prepare(1.0 / 4096.0, 1.0).unwrap();
    let x = vec![0i16; 65_549];
    let mut y = vec![0i16; 65_549];
    assert_eq!(
        softmax_s16(&p16, &x, 65_549, &mut y),
        Err(Error::QuantizedSumOverflow)
    );
    softmax_s16(&p16, &x[..65_548], 65_548, &mut y[..65_548]).unwrap();
    // Structural errors.
    assert_eq!(
        softmax_s8(&p8, &[1, 2, 3], 2, &mut scratch, &mut [0; 3]),
        Err(Error::RaggedBatch { len: 3, n: 2 })
    );
    assert_eq!(
        softmax_s8(&p8, &[1, 2], 2, &mut [0; 1], &mut [0; 2]),
        Err(Error::LengthMismatch {
            expected: 2,
            found: 1
        })
    );
    assert_eq!(
        softmax_s16(&p16, &[1, 2], 0, &mut [0; 2]),
        Err(Error::EmptyRow)
    );
    assert_eq!(
        softmax_s16(&p16, &[1, 2], 2, &mut [0; 3]),
        Err(Error::LengthMismatch {
            expected: 2,
            found: 3
        })
    );
}

#[test]
fn each_exp_once_equals_the_twice_computing_reference() {
    // TFLM's loop as written (softmax_suite::softmax_s8_twice: exp recomputed in the second pass).
    let twice = |p: &S8Params, row: &[i8], bits: i32| -> Vec<i32> {
        let mut out = vec![0i32; row.len()];
        suite::softmax_s8_twice(p, row, row.len(), bits, &mut out).unwrap();
        out
    };
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..3000 {
        let n = 1 + (next() % 300) as usize;
        let s = 2f32.powf(-9.0 + (next() % 800) as f32 / 100.0);
        let p = S8Params::prepare(s, 1.0).unwrap();
        let spread = 1 + (next() % 256) as i32;
        let top = -128 + (next() % 256) as i32;
        let row: Vec<i8> = (0..n)
            .map(|_| (top - (next() % spread as u64) as i32).max(-128) as i8)
            .collect();
        let mut scratch = vec![0; n];
        let mut y8 = vec![0i8; n];
        softmax_s8(&p, &row, n, &mut scratch, &mut y8).unwrap();
        assert_eq!(
            y8.iter().map(|&v| v as i32).collect::<Vec<_>>(),
            twice(&p, &row, 8)
        );
        let mut y16 = vec![0i16; n];
        softmax_s8_s16(&p, &row, n, &mut scratch, &mut y16).unwrap();
        assert_eq!(
            y16.iter().map(|&v| v as i32).collect::<Vec<_>>(),
            twice(&p, &row, 16)
        );
    }
}

#[test]
fn conform_answers_litert_cases() {
    // The protocol path (`harness conform`, CONFORMANCE.md's `softmax_quantized`) on LiteRT's
    // int8-input cases and on the int16 cases whose every row is TFLM's answer too: `y` equal,
    // and the parameters equal Prepare's.
    let golden = load("softmax_quantized_litert.json");
    let mut lines = Vec::new();
    let mut expected = Vec::new();
    for (i, case) in golden["cases"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .step_by(3)
    {
        let mut req = serde_json::Map::new();
        req.insert("id".into(), Value::from(i));
        req.insert("op".into(), Value::from("softmax_quantized"));
        for k in [
            "x",
            "shape",
            "input_type",
            "output_type",
            "input_scale",
            "beta",
        ] {
            req.insert(k.into(), case[k].clone());
        }
        lines.push(Value::Object(req).to_string());
        expected.push(case);
    }
    let answers = conform_support::run(&lines);
    let mut compared = 0;
    for (answer, case) in answers.iter().zip(&expected) {
        assert_eq!(answer["ok"], true, "{answer:?}");
        let (s, beta) = (f32_of(&case["input_scale"]), f32_of(&case["beta"]));
        if case["input_type"] == "int8" {
            let p = S8Params::prepare(s, beta).unwrap();
            assert_eq!(answer["diff_min"].as_i64().unwrap(), p.diff_min() as i64);
            assert_eq!(
                answer["input_multiplier"].as_i64().unwrap(),
                p.input_multiplier() as i64
            );
            assert_eq!(answer["y"], case["y"]);
            compared += 1;
        } else {
            let p = S16Params::prepare(s, beta).unwrap();
            assert_eq!(
                answer["input_left_shift"].as_i64().unwrap(),
                p.input_left_shift() as i64
            );
            assert!(answer.get("diff_min").is_none());
            // int16: LiteRT's own table may differ from TFLM's in a few rows (see above); compare
            // with the library, which matches LiteRT wherever TFLM and LiteRT agree.
            let x: Vec<i16> = ints(&case["x"]).iter().map(|&v| v as i16).collect();
            let n = ints(&case["shape"])[1] as usize;
            let mut y = vec![0i16; x.len()];
            softmax_s16(&p, &x, n, &mut y).unwrap();
            assert_eq!(
                ints(&answer["y"]),
                y.iter().map(|&v| v as i64).collect::<Vec<_>>()
            );
            compared += 1;
        }
    }
    assert!(compared > 500);
}

mod properties {
    //! Invariants of the quantized kernels on random rows (proptest): the output quanta sum to
    //! about one, the output is monotone in the input within a row, and adding a constant to a
    //! row changes nothing.
    use super::*;
    use proptest::prelude::*;

    /// A row of `n` int8 values and a valid input scale for it.
    fn s8_row() -> impl Strategy<Value = (Vec<i8>, f32)> {
        (1usize..=256, -9.0f32..-1.0).prop_flat_map(|(n, log2_scale)| {
            (
                proptest::collection::vec(any::<i8>(), n),
                Just(log2_scale.exp2()),
            )
        })
    }

    fn s16_row() -> impl Strategy<Value = (Vec<i16>, f32)> {
        (1usize..=256, -16.0f32..1.5).prop_flat_map(|(n, log2_scale)| {
            (
                proptest::collection::vec(any::<i16>(), n),
                Just(log2_scale.exp2()),
            )
        })
    }

    /// Rounding each output to a quantum moves the sum by at most n/2 quanta; the fixed-point
    /// reciprocal and sum (int8 input: Q12.19 terms, a relative error of at most n·2⁻²⁰ of the
    /// sum, which is at least 1) and the clamp of a lone maximum (128 → 127 quanta) add the rest.
    fn check_sum(sum: i64, total: i64, n: usize, sum_rel_err: f64) -> Result<(), TestCaseError> {
        let bound = n as f64 / 2.0 + 1.0 + total as f64 * sum_rel_err + 1.0;
        prop_assert!(
            ((sum - total) as f64).abs() <= bound,
            "sum {sum} of quanta, want {total} ± {bound}"
        );
        Ok(())
    }

    /// Each output against the exact softmax `p` of `s·x` (β = 1), in quanta of `1/q`: the final
    /// rounding (1/2), the sum's Q12.19 roundings and the exps' error (2.65e-7 each, see
    /// `fixed_point_exp_and_reciprocal_against_f64`) as a relative error of the sum (which is
    /// at least 1) of at most n·(2⁻²⁰ + 2.65e-7), the reciprocal's 1e-8, the quantized
    /// multiplier's 2⁻²⁶ in the exponent, and the clamp of the top output (q → q − 1).
    fn check_elements(
        x: &[i8],
        scale: f32,
        y: &[i64],
        q: f64,
        top: i64,
    ) -> Result<(), TestCaseError> {
        let n = x.len();
        let max = *x.iter().max().unwrap() as f64;
        let e: Vec<f64> = x
            .iter()
            .map(|&v| ((v as f64 - max) * scale as f64).exp())
            .collect();
        let sum: f64 = e.iter().sum();
        for (&yi, &ei) in y.iter().zip(&e) {
            let p = ei / sum;
            let rel = n as f64 * (2f64.powi(-20) + 2.65e-7) + 1e-8 + 2f64.powi(-26);
            let bound = 0.5 + q * (p * rel + 2.65e-7) + if yi == top { 0.5 } else { 0.0 };
            prop_assert!(
                (yi as f64 - q * p).abs() <= bound,
                "output {yi} quanta, exact {} (bound {bound})",
                q * p
            );
        }
        Ok(())
    }

    fn check_monotone<X: Ord + Copy, Y: Ord + Copy + std::fmt::Debug>(
        x: &[X],
        y: &[Y],
    ) -> Result<(), TestCaseError> {
        let mut idx: Vec<usize> = (0..x.len()).collect();
        idx.sort_by_key(|&i| x[i]);
        for w in idx.windows(2) {
            prop_assert!(
                y[w[0]] <= y[w[1]],
                "not monotone: {:?} > {:?}",
                y[w[0]],
                y[w[1]]
            );
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn s8_kernels((x, scale) in s8_row(), shift in -255i32..=255) {
            let n = x.len();
            let p = S8Params::prepare(scale, 1.0).unwrap();
            let mut scratch = vec![0; n];
            let mut y8 = vec![0i8; n];
            softmax_s8(&p, &x, n, &mut scratch, &mut y8).unwrap();
            let mut y16 = vec![0i16; n];
            softmax_s8_s16(&p, &x, n, &mut scratch, &mut y16).unwrap();
            let sum_err = n as f64 * 2f64.powi(-20);
            check_sum(y8.iter().map(|&v| v as i64 + 128).sum(), 256, n, sum_err)?;
            check_sum(y16.iter().map(|&v| v as i64 + 32768).sum(), 65536, n, sum_err)?;
            check_elements(&x, scale, &y8.iter().map(|&v| v as i64 + 128).collect::<Vec<_>>(), 256.0, 255)?;
            check_elements(&x, scale, &y16.iter().map(|&v| v as i64 + 32768).collect::<Vec<_>>(), 65536.0, 65535)?;
            check_monotone(&x, &y8)?;
            check_monotone(&x, &y16)?;
            // The same row moved by a constant that keeps it in range.
            let (lo, hi) = (*x.iter().min().unwrap() as i32, *x.iter().max().unwrap() as i32);
            let c = shift.clamp(-128 - lo, 127 - hi);
            let moved: Vec<i8> = x.iter().map(|&v| (v as i32 + c) as i8).collect();
            let mut z8 = vec![0i8; n];
            softmax_s8(&p, &moved, n, &mut scratch, &mut z8).unwrap();
            prop_assert_eq!(&z8, &y8);
            let mut z16 = vec![0i16; n];
            softmax_s8_s16(&p, &moved, n, &mut scratch, &mut z16).unwrap();
            prop_assert_eq!(&z16, &y16);
        }

        #[test]
        fn s16_kernel((x, scale) in s16_row(), shift in -65535i32..=65535) {
            let n = x.len();
            let p = S16Params::prepare(scale, 1.0).unwrap();
            let mut y = vec![0i16; n];
            softmax_s16(&p, &x, n, &mut y).unwrap();
            // The reciprocal comes from a 513-entry table: about 2⁻¹⁵ relative.
            check_sum(y.iter().map(|&v| v as i64).sum(), 32768, n, 2f64.powi(-15))?;
            check_monotone(&x, &y)?;
            let (lo, hi) = (*x.iter().min().unwrap() as i32, *x.iter().max().unwrap() as i32);
            let c = shift.clamp(-32768 - lo, 32767 - hi);
            let moved: Vec<i16> = x.iter().map(|&v| (v as i32 + c) as i16).collect();
            let mut z = vec![0i16; n];
            softmax_s16(&p, &moved, n, &mut z).unwrap();
            prop_assert_eq!(&z, &y);
        }
    }
}
