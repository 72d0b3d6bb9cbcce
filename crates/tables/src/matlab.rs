//! MATLAB's MAT-file level 5 (MathWorks, "MAT-File Format", the version MATLAB 5 to 7.2 write
//! by default and `scipy.io.loadmat` reads): the run's tables as structs of column vectors and
//! its summaries as nested structs, in one file. Written here: the format is a few element
//! kinds (a 128-byte header, then tagged elements padded to 8 bytes), and the Rust crates that
//! know it read MAT files without writing them.

use std::path::Path;

use crate::TableError;

/// A MATLAB value: what a variable, a struct's field or a cell holds.
#[derive(Debug, Clone, PartialEq)]
pub enum MatValue {
    /// A real double matrix of `rows` x `cols`, column-major.
    Double {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
        /// The entries, column after column.
        data: Vec<f64>,
    },
    /// A logical scalar.
    Logical(bool),
    /// A character row vector.
    Char(String),
    /// A column cell array.
    Cell(Vec<MatValue>),
    /// A 1 x 1 struct, its fields in order (names made valid MATLAB identifiers on writing).
    Struct(Vec<(String, MatValue)>),
    /// The empty double matrix `[]` (JSON's null).
    Empty,
}

// Element types and array classes of the format.
const MI_INT8: u32 = 1;
const MI_UINT8: u32 = 2;
const MI_UINT16: u32 = 4;
const MI_INT32: u32 = 5;
const MI_UINT32: u32 = 6;
const MI_DOUBLE: u32 = 9;
const MI_MATRIX: u32 = 14;
const MX_CELL: u32 = 1;
const MX_STRUCT: u32 = 2;
const MX_CHAR: u32 = 4;
const MX_DOUBLE: u32 = 6;
const MX_UINT8: u32 = 9;
/// The array flags' logical bit.
const LOGICAL: u32 = 0x200;
/// Bytes given to each field name of a struct (MATLAB's limit of 63 characters, and the null).
const FIELD_NAME: usize = 64;

impl MatValue {
    /// A column vector of doubles.
    pub fn column(data: Vec<f64>) -> MatValue {
        MatValue::Double {
            rows: data.len(),
            cols: 1,
            data,
        }
    }

    /// A double scalar.
    pub fn scalar(v: f64) -> MatValue {
        MatValue::Double {
            rows: 1,
            cols: 1,
            data: vec![v],
        }
    }

    /// A JSON value as MATLAB holds it: null as `[]`, numbers as doubles, an array of numbers (or
    /// nulls, as NaN) as a column, an array of equally long number arrays as a matrix (one row
    /// each), other arrays as a cell, objects as structs.
    pub fn from_json(v: &serde_json::Value) -> MatValue {
        use serde_json::Value;
        let number = |v: &Value| match v {
            Value::Number(n) => n.as_f64(),
            Value::Null => Some(f64::NAN),
            _ => None,
        };
        match v {
            Value::Null => MatValue::Empty,
            Value::Bool(b) => MatValue::Logical(*b),
            Value::Number(n) => MatValue::scalar(n.as_f64().unwrap_or(f64::NAN)),
            Value::String(s) => MatValue::Char(s.clone()),
            Value::Array(items) => {
                if let Some(col) = items.iter().map(number).collect::<Option<Vec<f64>>>() {
                    if !items.is_empty() && items.iter().any(|i| !i.is_null()) {
                        return MatValue::column(col);
                    }
                }
                if let Some(m) = matrix(items) {
                    return m;
                }
                MatValue::Cell(items.iter().map(MatValue::from_json).collect())
            }
            Value::Object(map) => MatValue::Struct(
                map.iter()
                    .map(|(k, v)| (k.clone(), MatValue::from_json(v)))
                    .collect(),
            ),
        }
    }

    /// The element bytes of this value as a variable called `name` (empty inside a struct or a
    /// cell).
    fn element(&self, name: &str) -> Vec<u8> {
        let mut body = Vec::new();
        let (class, dims) = self.class_and_dims();
        put_element(&mut body, MI_UINT32, &u32s(&[class, 0]));
        let dims: Vec<i32> = dims.iter().map(|&d| d as i32).collect();
        put_element(&mut body, MI_INT32, &i32s(&dims));
        put_element(&mut body, MI_INT8, name.as_bytes());
        match self {
            MatValue::Double { data, .. } => put_element(&mut body, MI_DOUBLE, &f64s(data)),
            MatValue::Empty => put_element(&mut body, MI_DOUBLE, &[]),
            MatValue::Logical(b) => put_element(&mut body, MI_UINT8, &[u8::from(*b)]),
            MatValue::Char(s) => {
                let units: Vec<u8> = s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
                put_element(&mut body, MI_UINT16, &units);
            }
            MatValue::Cell(items) => {
                for item in items {
                    body.extend(item.element(""));
                }
            }
            MatValue::Struct(fields) => {
                put_element(&mut body, MI_INT32, &i32s(&[FIELD_NAME as i32]));
                let names = identifiers(fields.iter().map(|f| f.0.as_str()));
                let mut packed = Vec::with_capacity(names.len() * FIELD_NAME);
                for n in &names {
                    let mut bytes = n.as_bytes().to_vec();
                    bytes.resize(FIELD_NAME, 0);
                    packed.extend(bytes);
                }
                put_element(&mut body, MI_INT8, &packed);
                for (_, v) in fields {
                    body.extend(v.element(""));
                }
            }
        }
        let mut out = Vec::with_capacity(body.len() + 8);
        put_element(&mut out, MI_MATRIX, &body);
        out
    }

    /// The array class (with the logical flag) and the dimensions.
    fn class_and_dims(&self) -> (u32, Vec<usize>) {
        match self {
            MatValue::Double { rows, cols, .. } => (MX_DOUBLE, vec![*rows, *cols]),
            MatValue::Empty => (MX_DOUBLE, vec![0, 0]),
            MatValue::Logical(_) => (MX_UINT8 | LOGICAL, vec![1, 1]),
            MatValue::Char(s) => (MX_CHAR, vec![1, s.encode_utf16().count()]),
            MatValue::Cell(items) => (MX_CELL, vec![items.len(), 1]),
            MatValue::Struct(_) => (MX_STRUCT, vec![1, 1]),
        }
    }
}

/// A table as MATLAB holds it: a struct with a column vector per numeric column (integers as
/// doubles, gaps as NaN) or a cell column of text, and a `units` struct of the same fields
/// holding each column's unit (the table's schema; "?" when unknown).
pub fn table_struct(table: &flexbench_contracts::Table) -> MatValue {
    use flexbench_contracts::Column;
    let mut fields = Vec::with_capacity(table.width() + 1);
    let mut units = Vec::with_capacity(table.width());
    for field in table.fields() {
        let value = match field.column() {
            Column::F64(v) => MatValue::column(v.clone()),
            Column::OptF64(v) => {
                MatValue::column(v.iter().map(|x| x.unwrap_or(f64::NAN)).collect())
            }
            Column::I64(v) => MatValue::column(v.iter().map(|&x| x as f64).collect()),
            Column::Str(v) => MatValue::Cell(v.iter().map(|s| MatValue::Char(s.clone())).collect()),
        };
        fields.push((field.name().to_string(), value));
        units.push((
            field.name().to_string(),
            MatValue::Char(field.unit().into()),
        ));
    }
    fields.push(("units".into(), MatValue::Struct(units)));
    MatValue::Struct(fields)
}

/// An array of equally long arrays of numbers as a matrix, one row each; None otherwise.
fn matrix(items: &[serde_json::Value]) -> Option<MatValue> {
    let rows: Vec<&Vec<serde_json::Value>> =
        items.iter().map(|i| i.as_array()).collect::<Option<_>>()?;
    let cols = rows.first()?.len();
    if cols == 0 || rows.iter().any(|r| r.len() != cols) {
        return None;
    }
    let mut data = vec![0.0; rows.len() * cols];
    for (i, r) in rows.iter().enumerate() {
        for (j, v) in r.iter().enumerate() {
            data[j * rows.len() + i] = match v {
                serde_json::Value::Number(n) => n.as_f64()?,
                serde_json::Value::Null => f64::NAN,
                _ => return None,
            };
        }
    }
    Some(MatValue::Double {
        rows: rows.len(),
        cols,
        data,
    })
}

/// Names made valid, distinct MATLAB identifiers: a letter first, then letters, digits or
/// underscores (others become underscores), at most 63 characters; a repeated name gets a
/// numbered suffix.
pub fn identifiers<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        let mut id: String = n
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        if !id.starts_with(|c: char| c.is_ascii_alphabetic()) {
            id.insert(0, 'x');
        }
        id.truncate(FIELD_NAME - 5);
        let base = id.clone();
        let mut k = 2;
        while out.contains(&id) {
            id = format!("{base}_{k}");
            k += 1;
        }
        out.push(id);
    }
    out
}

/// Write the variables `vars` (name, value; made one at a time, so that a run's tables are not
/// all held at once) to the MAT file at `path`, through a temporary file renamed into place: an
/// earlier file is replaced only by a whole one, and the first error stops the writing.
pub fn write_mat(
    path: &Path,
    vars: impl IntoIterator<Item = Result<(String, MatValue), TableError>>,
) -> Result<(), TableError> {
    use std::io::Write;
    let io = |e: std::io::Error| TableError::io(path, "be written", e);
    flexbench_contracts::atomic::write_with(path, |tmp| -> Result<(), TableError> {
        let mut out = std::io::BufWriter::new(std::fs::File::create(tmp).map_err(io)?);
        out.write_all(&header()).map_err(io)?;
        let mut names: Vec<String> = Vec::new();
        for var in vars {
            let (name, value) = var?;
            let mut all: Vec<&str> = names.iter().map(String::as_str).collect();
            all.push(&name);
            let id = identifiers(all.into_iter()).pop().unwrap_or_default();
            out.write_all(&value.element(&id)).map_err(io)?;
            names.push(id);
        }
        out.into_inner()
            .map_err(|e| io(e.into_error()))?
            .sync_all()
            .map_err(io)
    })
    .map_err(|e| match e {
        flexbench_contracts::atomic::AtomicError::Fill(e) => e,
        flexbench_contracts::atomic::AtomicError::Io(p, e) => TableError::io(&p, "be written", e),
    })
}

/// The 128-byte header: the descriptive text, no subsystem data, version 0x0100, the endian
/// indicator "IM" (little-endian).
fn header() -> Vec<u8> {
    let mut text = format!(
        "MATLAB 5.0 MAT-file, Platform: {}, Created by: flexbench {}",
        std::env::consts::OS,
        env!("CARGO_PKG_VERSION")
    )
    .into_bytes();
    text.resize(116, b' ');
    text.extend([0u8; 8]);
    text.extend(0x0100u16.to_le_bytes());
    text.extend(*b"IM");
    text
}

/// A tagged element: type, byte count, the bytes, zeros to the next multiple of 8.
fn put_element(out: &mut Vec<u8>, kind: u32, data: &[u8]) {
    out.extend(kind.to_le_bytes());
    out.extend((data.len() as u32).to_le_bytes());
    out.extend_from_slice(data);
    out.resize(out.len() + (8 - data.len() % 8) % 8, 0);
}

fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn i32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f64s(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header's size, version and endian marks; a double column's element laid out as the
    /// format says (flags, dims 3 x 1, name padded to 8, data), every element 8-aligned.
    #[test]
    fn header_and_a_column_as_the_format_lays_them_out() {
        let h = header();
        assert_eq!(h.len(), 128);
        assert_eq!(&h[124..128], &[0x00, 0x01, b'I', b'M']);
        let e = MatValue::column(vec![1.0, 2.0, 3.0]).element("abc");
        assert_eq!(e.len() % 8, 0);
        let word = |k: usize| u32::from_le_bytes(e[k..k + 4].try_into().unwrap());
        assert_eq!((word(0), word(4) as usize), (MI_MATRIX, e.len() - 8));
        assert_eq!(
            (word(8), word(12), word(16) & 0xff),
            (MI_UINT32, 8, MX_DOUBLE)
        );
        assert_eq!(
            (word(24), word(28), word(32), word(36)),
            (MI_INT32, 8, 3, 1)
        );
        assert_eq!((word(40), word(44), &e[48..51]), (MI_INT8, 3, &b"abc"[..]));
        assert_eq!((word(56), word(60)), (MI_DOUBLE, 24));
        assert_eq!(f64::from_le_bytes(e[72..80].try_into().unwrap()), 2.0);
    }

    /// JSON as MATLAB holds it: numbers, number arrays (nulls as NaN), matrices, mixed arrays as
    /// cells, objects as structs, null as []; names made identifiers.
    #[test]
    fn json_values_and_names() {
        let v: serde_json::Value = serde_json::from_str(
            r#"{"a": 1.5, "b": [1, null, 3], "m": [[1, 2], [3, 4], [5, 6]], "c": [{"x": 1}, "s"], "n": null, "1st": true}"#,
        )
        .unwrap();
        let MatValue::Struct(f) = MatValue::from_json(&v) else {
            panic!("not a struct")
        };
        let get = |k: &str| {
            f.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(get("a"), MatValue::scalar(1.5));
        let MatValue::Double {
            rows: 3,
            cols: 1,
            data,
        } = get("b")
        else {
            panic!()
        };
        assert!(data[1].is_nan() && data[2] == 3.0);
        assert_eq!(
            get("m"),
            MatValue::Double {
                rows: 3,
                cols: 2,
                data: vec![1.0, 3.0, 5.0, 2.0, 4.0, 6.0]
            }
        );
        assert!(matches!(get("c"), MatValue::Cell(ref c) if c.len() == 2));
        assert_eq!(get("n"), MatValue::Empty);
        assert_eq!(
            identifiers(["1st", "a b", "a_b", "markers.rigid"].into_iter()),
            ["x1st", "a_b", "a_b_2", "markers_rigid"]
        );
    }
}
