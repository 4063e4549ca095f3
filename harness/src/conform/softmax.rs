//! The softmax family (CONFORMANCE.md, "Softmax family"): rows over the last axis of `x` with
//! shape `[N]` or `[R, N]`, an optional temperature and keep-mask, computed by softmax-core's
//! batched functions ([`softmax_core::rows`]) with the `Poly` backend, in the request's dtype.

use softmax_core::backend::{Backend, Poly};
use softmax_core::{rows, Rows};

use super::request::{Real, Request, RowShape};
use super::wire::float_array;
use super::{Failure, Outputs};

/// Fields of the forward ops (besides `id`, `op`, `dtype`).
pub(super) const FIELDS: &[&str] = &["x", "shape", "temperature", "mask"];
/// Fields of the VJPs: the forward fields and the upstream gradient `dy`.
pub(super) const VJP_FIELDS: &[&str] = &["x", "shape", "temperature", "mask", "dy"];

/// One validated request of the family.
struct Batch<F> {
    x: Vec<F>,
    shape: RowShape,
    temperature: F,
    mask: Option<Vec<bool>>,
    /// The upstream gradient (VJPs only; empty otherwise).
    dy: Vec<F>,
}

impl<F: Real> Batch<F> {
    /// Reads and validates the fields: first every field's type (`invalid_param`), then the
    /// shape and the lengths against it (`shape`), then the temperature value (`invalid_param`).
    fn parse(req: &Request<'_>, with_dy: bool) -> Result<Self, Failure> {
        let x = req.floats::<F>("x")?;
        let shape = req.row_shape("shape")?;
        let temperature = req.float_or("temperature", F::ONE)?;
        let mask = req.opt_bools("mask")?;
        let dy = if with_dy {
            req.floats::<F>("dy")?
        } else {
            Vec::new()
        };
        shape.check_len("x", x.len())?;
        if let Some(m) = &mask {
            shape.check_len("mask", m.len())?;
        }
        if with_dy {
            shape.check_len("dy", dy.len())?;
        }
        if !(temperature > F::ZERO && temperature.is_finite()) {
            return Err(Failure::invalid_param(format!(
                "`temperature` must be positive and finite, got {temperature} (as {})",
                F::DTYPE
            )));
        }
        Ok(Batch {
            x,
            shape,
            temperature,
            mask,
            dy,
        })
    }

    fn spec(&self) -> Rows<'_, F> {
        let spec = Rows::new(self.shape.n).with_temperature(self.temperature);
        match &self.mask {
            Some(keep) => spec.with_keep(keep),
            None => spec,
        }
    }

    /// softmax(x/τ) of every row (masked), the `y` the VJPs start from.
    fn softmax(&self) -> Result<Vec<F>, Failure>
    where
        Poly: Backend<F>,
    {
        let mut y = vec![F::ZERO; self.x.len()];
        rows::softmax(Poly, &self.x, &mut y, &self.spec())?;
        Ok(y)
    }

    /// log_softmax(x/τ) of every row (masked).
    fn log_softmax(&self) -> Result<Vec<F>, Failure>
    where
        Poly: Backend<F>,
    {
        let mut y = vec![F::ZERO; self.x.len()];
        rows::log_softmax(Poly, &self.x, &mut y, &self.spec())?;
        Ok(y)
    }
}

/// `softmax`: `y` = softmax(x/τ) per row.
pub(super) fn softmax<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure>
where
    Poly: Backend<F>,
{
    let b = Batch::<F>::parse(req, false)?;
    Ok(vec![("y", float_array(&b.softmax()?))])
}

/// `log_softmax`: `y` = log_softmax(x/τ) per row.
pub(super) fn log_softmax<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure>
where
    Poly: Backend<F>,
{
    let b = Batch::<F>::parse(req, false)?;
    Ok(vec![("y", float_array(&b.log_softmax()?))])
}

/// `logsumexp`: `y` = one logsumexp(x/τ) per row.
pub(super) fn logsumexp<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure>
where
    Poly: Backend<F>,
{
    let b = Batch::<F>::parse(req, false)?;
    let mut y = vec![F::ZERO; b.shape.rows];
    rows::logsumexp(Poly, &b.x, &mut y, &b.spec())?;
    Ok(vec![("y", float_array(&y))])
}

/// `entropy`: `y` = one Shannon entropy (nats) of softmax(x/τ) per row.
pub(super) fn entropy<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure>
where
    Poly: Backend<F>,
{
    let b = Batch::<F>::parse(req, false)?;
    let mut y = vec![F::ZERO; b.shape.rows];
    rows::entropy(Poly, &b.x, &mut y, &b.spec())?;
    Ok(vec![("y", float_array(&y))])
}

/// `softmax_vjp`: `dx` = ∂/∂x of Σ dy ⊙ softmax(x/τ), from y = softmax(x/τ) (masked).
pub(super) fn softmax_vjp<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure>
where
    Poly: Backend<F>,
{
    let b = Batch::<F>::parse(req, true)?;
    let y = b.softmax()?;
    let mut dx = vec![F::ZERO; y.len()];
    rows::softmax_vjp(
        &y,
        &b.dy,
        &mut dx,
        &Rows::new(b.shape.n).with_temperature(b.temperature),
    )?;
    Ok(vec![("dx", float_array(&dx))])
}

/// `log_softmax_vjp`: `dx` = ∂/∂x of Σ dy ⊙ log_softmax(x/τ), from the logits (so masked and
/// `-inf` entries are the only constants, as the protocol specifies).
pub(super) fn log_softmax_vjp<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure>
where
    Poly: Backend<F>,
{
    let b = Batch::<F>::parse(req, true)?;
    let mut dx = vec![F::ZERO; b.x.len()];
    rows::log_softmax_vjp_from_logits(Poly, &b.x, &b.dy, &mut dx, &b.spec())?;
    Ok(vec![("dx", float_array(&dx))])
}

/// `sparsemax`: `y` = sparsemax(x/τ) per row.
pub(super) fn sparsemax<F: Real>(req: &Request<'_>) -> Result<Outputs, Failure> {
    let b = Batch::<F>::parse(req, false)?;
    let mut y = vec![F::ZERO; b.x.len()];
    rows::sparsemax(&b.x, &mut y, &b.spec())?;
    Ok(vec![("y", float_array(&y))])
}
