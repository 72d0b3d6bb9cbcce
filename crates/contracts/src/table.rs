//! A named-column table, the common currency of the stages' outputs before they are written as
//! CSV and Parquet by `flexbench-tables`.

use crate::ContractError;

/// One column of a [`Table`]: floats (SI units), optional floats (empty where not measured),
/// integers (frame numbers, mode numbers) or text (marker and body names).
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    /// Real values in SI units.
    F64(Vec<f64>),
    /// Real values with gaps (`None` is written as an empty cell / null).
    OptF64(Vec<Option<f64>>),
    /// Whole numbers (frame index, mode number).
    I64(Vec<i64>),
    /// Names (marker, body).
    Str(Vec<String>),
}

impl Column {
    /// Number of rows in the column.
    pub fn len(&self) -> usize {
        match self {
            Column::F64(v) => v.len(),
            Column::OptF64(v) => v.len(),
            Column::I64(v) => v.len(),
            Column::Str(v) => v.len(),
        }
    }
    /// True when the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A table of equally long named columns, in the order they are written.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// Table name, used in messages ("forces", "markers").
    pub name: String,
    /// Columns in write order.
    pub columns: Vec<(String, Column)>,
}

impl Table {
    /// An empty table called `name`.
    pub fn new(name: &str) -> Self {
        Table {
            name: name.to_string(),
            columns: Vec::new(),
        }
    }
    /// Append a column; its length must equal the existing columns'.
    pub fn push(&mut self, name: &str, column: Column) -> Result<(), ContractError> {
        if let Some((_, first)) = self.columns.first() {
            if first.len() != column.len() {
                return Err(ContractError::RaggedColumn {
                    table: self.name.clone(),
                    column: name.to_string(),
                    len: column.len(),
                    expected: first.len(),
                });
            }
        }
        self.columns.push((name.to_string(), column));
        Ok(())
    }
    /// Number of rows.
    pub fn height(&self) -> usize {
        self.columns.first().map(|(_, c)| c.len()).unwrap_or(0)
    }
    /// The column called `name`, if any.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }
    /// The float column called `name` (plain or optional with no gaps), or an error naming it.
    pub fn f64_column(&self, name: &str) -> Result<Vec<f64>, ContractError> {
        let missing = || ContractError::MissingColumn {
            table: self.name.clone(),
            column: name.to_string(),
            found: self
                .columns
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        };
        match self.column(name) {
            Some(Column::F64(v)) => Ok(v.clone()),
            Some(Column::I64(v)) => Ok(v.iter().map(|&x| x as f64).collect()),
            Some(Column::OptF64(v)) => Ok(v.iter().map(|x| x.unwrap_or(f64::NAN)).collect()),
            _ => Err(missing()),
        }
    }
}
