//! Columns handed to Python without a copy: a [`Column`] owns the values the estimator
//! computed and describes them through numpy's array interface (`__array_interface__`), so
//! `numpy.asarray(column)` is a writable array over the same memory, which keeps the column
//! alive (as the array's `base`) for as long as it is used. The values are never read, moved
//! or resized by Rust after the column is made; numpy reads and writes them through the
//! address taken, mutably, when the column was made.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The values of a column: `f64` or `i64`. Held only to be freed with the column.
enum Values {
    F64(#[allow(dead_code)] Vec<f64>),
    I64(#[allow(dead_code)] Vec<i64>),
}

/// A column of values computed in Rust, read (and written) by numpy in place.
#[pyclass(frozen, module = "hazardserve._native")]
pub(crate) struct Column {
    /// The owner of the memory at `address`.
    _values: Values,
    /// The values' address, from `as_mut_ptr` (numpy may write through it), and their count.
    address: usize,
    len: usize,
    /// numpy's type code: `f` or `i` (8-byte values).
    kind: char,
    /// Rows and columns for a 2-D block laid out column after column (`shape` is then
    /// `(columns, rows)` in C order, which `.T` turns into the table); `None` for 1-D.
    block: Option<(usize, usize)>,
}

impl Column {
    /// A 1-D column of `f64`.
    pub(crate) fn f64(mut values: Vec<f64>) -> Column {
        let (address, len) = (values.as_mut_ptr() as usize, values.len());
        Column {
            _values: Values::F64(values),
            address,
            len,
            kind: 'f',
            block: None,
        }
    }

    /// `columns` columns of `f64` of equal length, one after the other.
    pub(crate) fn f64_block(values: Vec<f64>, columns: usize) -> Column {
        Column {
            block: Some(block_shape(values.len(), columns)),
            ..Column::f64(values)
        }
    }

    /// `columns` columns of `i64` of equal length, one after the other.
    pub(crate) fn i64_block(mut values: Vec<i64>, columns: usize) -> Column {
        let shape = block_shape(values.len(), columns);
        let (address, len) = (values.as_mut_ptr() as usize, values.len());
        Column {
            _values: Values::I64(values),
            address,
            len,
            kind: 'i',
            block: Some(shape),
        }
    }
}

/// `(columns, rows)` of `len` values in `columns` columns of equal length.
fn block_shape(len: usize, columns: usize) -> (usize, usize) {
    debug_assert!(
        columns > 0 && len.is_multiple_of(columns),
        "{len} values in {columns} columns"
    );
    (columns, len.checked_div(columns).unwrap_or(0))
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
        let d = PyDict::new(py);
        match self.block {
            Some(shape) => d.set_item("shape", shape)?,
            None => d.set_item("shape", (self.len,))?,
        }
        d.set_item("typestr", typestr(self.kind))?;
        d.set_item("data", (self.address, false))?;
        d.set_item("version", 3)?;
        Ok(d)
    }
}
