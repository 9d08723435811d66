//! Columns handed to Python without a copy: a [`Column`] owns the values the estimator
//! computed and describes them through numpy's array interface (`__array_interface__`), so
//! `numpy.asarray(column)` is a writable array over the same memory, which keeps the column
//! alive for as long as it is used. The values are never moved or resized after the column is
//! made, so the address it gives stays valid.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The values of a column: `f64` or `i64`.
enum Values {
    F64(Vec<f64>),
    I64(Vec<i64>),
}

/// A column of values computed in Rust, read by numpy in place.
#[pyclass(frozen, module = "hazardserve._native")]
pub(crate) struct Column {
    values: Values,
    /// Rows and columns for a 2-D block laid out column after column (`shape` is then
    /// `(columns, rows)` in C order, which `.T` turns into the table); `None` for 1-D.
    block: Option<(usize, usize)>,
}

impl Column {
    /// A 1-D column of `f64`.
    pub(crate) fn f64(values: Vec<f64>) -> Column {
        Column {
            values: Values::F64(values),
            block: None,
        }
    }

    /// `columns` columns of `f64` of equal length, one after the other.
    pub(crate) fn f64_block(values: Vec<f64>, columns: usize) -> Column {
        let rows = values.len().checked_div(columns).unwrap_or(0);
        Column {
            values: Values::F64(values),
            block: Some((columns, rows)),
        }
    }

    /// `columns` columns of `i64` of equal length, one after the other.
    pub(crate) fn i64_block(values: Vec<i64>, columns: usize) -> Column {
        let rows = values.len().checked_div(columns).unwrap_or(0);
        Column {
            values: Values::I64(values),
            block: Some((columns, rows)),
        }
    }
}

/// numpy's type string for a native-endian 8-byte value of `kind` (`f` or `i`).
fn typestr(kind: char) -> String {
    let order = if cfg!(target_endian = "little") {
        '<'
    } else {
        '>'
    };
    format!("{order}{kind}8")
}

#[pymethods]
impl Column {
    /// numpy's array interface (version 3): shape, type and the address of the values.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (len, address, kind) = match &self.values {
            Values::F64(v) => (v.len(), v.as_ptr() as usize, 'f'),
            Values::I64(v) => (v.len(), v.as_ptr() as usize, 'i'),
        };
        let d = PyDict::new(py);
        match self.block {
            Some(shape) => d.set_item("shape", shape)?,
            None => d.set_item("shape", (len,))?,
        }
        d.set_item("typestr", typestr(kind))?;
        d.set_item("data", (address, false))?;
        d.set_item("version", 3)?;
        Ok(d)
    }

    /// The number of values.
    fn __len__(&self) -> usize {
        match &self.values {
            Values::F64(v) => v.len(),
            Values::I64(v) => v.len(),
        }
    }
}
