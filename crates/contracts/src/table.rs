//! A named-column table, the common currency of the stages' outputs before they are written as
//! CSV and Parquet by `flexbench-tables`. Each column carries its schema: its name, its unit
//! and its kind (the [`Column`] variant); the writers of the units row, the MATLAB file and the
//! Excel workbook read the unit from the table, not from the column's name.

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

/// One column of a table with its schema: name, unit ("m", "N m", "px", "-" for a plain
/// number, "" for text, "?" where the table's schema does not know it) and values.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    name: String,
    unit: String,
    column: Column,
}

impl Field {
    /// The column's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The column's unit.
    pub fn unit(&self) -> &str {
        &self.unit
    }
    /// The column's values (their kind the variant).
    pub fn column(&self) -> &Column {
        &self.column
    }
}

/// A table of equally long, uniquely named columns in the order they are written, each with
/// its unit. Built only through [`Table::push`] and [`Table::from_columns`], which refuse a
/// column of another length or a name already taken.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    name: String,
    fields: Vec<Field>,
}

impl Table {
    /// An empty table called `name` ("forces", "markers": the schema its units come from,
    /// [`crate::units::unit_of`]).
    pub fn new(name: &str) -> Self {
        Table {
            name: name.to_string(),
            fields: Vec::new(),
        }
    }

    /// The table `name` of the columns `columns` in their order, each with the unit of the
    /// table's schema; an error naming the first column of another length or a repeated name.
    pub fn from_columns<N: AsRef<str>>(
        name: &str,
        columns: impl IntoIterator<Item = (N, Column)>,
    ) -> Result<Self, ContractError> {
        let mut table = Table::new(name);
        for (n, c) in columns {
            table.push(n.as_ref(), c)?;
        }
        Ok(table)
    }

    /// Append a column with its unit from the table's schema ([`crate::units::unit_of`] of the
    /// table's name, "?" where unknown); its length must equal the existing columns'.
    pub fn push(&mut self, name: &str, column: Column) -> Result<(), ContractError> {
        let unit = crate::units::unit_of(&self.name, name).unwrap_or("?");
        self.push_with_unit(name, unit, column)
    }

    /// Append a column of unit `unit` (one the schema cannot know: a measured table's own
    /// columns); its length must equal the existing columns', its name not taken.
    pub fn push_with_unit(
        &mut self,
        name: &str,
        unit: &str,
        column: Column,
    ) -> Result<(), ContractError> {
        let expected = self.height();
        if !self.fields.is_empty() && expected != column.len() {
            return Err(ContractError::RaggedColumn {
                table: self.name.clone(),
                column: name.to_string(),
                len: column.len(),
                expected,
            });
        }
        if self.column(name).is_some() {
            return Err(ContractError::DuplicateColumn {
                table: self.name.clone(),
                column: name.to_string(),
            });
        }
        self.fields.push(Field {
            name: name.to_string(),
            unit: unit.to_string(),
            column,
        });
        Ok(())
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The columns with their schema, in write order.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }
    /// The columns' names and values, in write order.
    pub fn columns(&self) -> impl Iterator<Item = (&str, &Column)> {
        self.fields.iter().map(|f| (f.name.as_str(), &f.column))
    }
    /// The columns' names, in write order.
    pub fn names(&self) -> Vec<&str> {
        self.fields.iter().map(|f| f.name.as_str()).collect()
    }
    /// The columns' names and values, taken.
    pub fn into_columns(self) -> Vec<(String, Column)> {
        self.fields
            .into_iter()
            .map(|f| (f.name, f.column))
            .collect()
    }
    /// Number of columns.
    pub fn width(&self) -> usize {
        self.fields.len()
    }
    /// Number of rows.
    pub fn height(&self) -> usize {
        self.fields.first().map(|f| f.column.len()).unwrap_or(0)
    }
    /// The column called `name`, if any.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .map(|f| &f.column)
    }
    /// The unit of the column called `name`, if any.
    pub fn unit(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.unit.as_str())
    }
    /// The float column called `name` (plain or optional with no gaps), or an error naming it.
    pub fn f64_column(&self, name: &str) -> Result<Vec<f64>, ContractError> {
        let missing = || ContractError::MissingColumn {
            table: self.name.clone(),
            column: name.to_string(),
            found: self.names().join(", "),
        };
        match self.column(name) {
            Some(Column::F64(v)) => Ok(v.clone()),
            Some(Column::I64(v)) => Ok(v.iter().map(|&x| x as f64).collect()),
            Some(Column::OptF64(v)) => Ok(v.iter().map(|x| x.unwrap_or(f64::NAN)).collect()),
            _ => Err(missing()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A column of another length and a repeated name are refused by name; each column carries
    /// its schema's unit, "?" where the schema does not know it, or the unit given.
    #[test]
    fn a_table_keeps_its_invariants_and_units() {
        let mut t = Table::from_columns(
            "forces",
            [
                ("t", Column::F64(vec![0.0, 0.01])),
                ("B_x", Column::OptF64(vec![Some(1.0), None])),
            ],
        )
        .unwrap();
        let ragged = t.push("B_y", Column::F64(vec![1.0])).unwrap_err();
        assert!(
            ragged.to_string().contains("'B_y' has 1 rows, expected 2"),
            "{ragged}"
        );
        let twice = t.push("t", Column::F64(vec![0.0, 1.0])).unwrap_err();
        assert!(twice.to_string().contains("'t'"), "{twice}");
        t.push("mystery", Column::F64(vec![0.0, 1.0])).unwrap();
        t.push_with_unit("pressure", "Pa", Column::F64(vec![0.0, 1.0]))
            .unwrap();
        let units: Vec<&str> = t.fields().iter().map(Field::unit).collect();
        assert_eq!(units, ["s", "N", "?", "Pa"]);
        assert_eq!(t.names(), ["t", "B_x", "mystery", "pressure"]);
        assert_eq!(t.height(), 2);
        assert_eq!(t.width(), 4);
    }
}
