//! The run's main tables as one Excel workbook (`rust_xlsxwriter`): a sheet per table, the
//! column names in the first row, their units in the second (`flexbench_contracts::units`),
//! the values from the third, both header rows frozen. Gaps are empty cells (a workbook holds
//! no NaN). A table longer than a sheet continues on sheets "<name> 2", "<name> 3"...

use std::path::Path;

use flexbench_contracts::{Column, Table};
use rust_xlsxwriter::{DocProperties, ExcelDateTime, Format, Workbook, Worksheet, XlsxError};

use crate::TableError;

/// Rows of a sheet (Excel's limit) less the two header rows.
const SHEET_ROWS: usize = 1_048_576 - 2;

/// Write `tables` (each named for its sheet and carrying its units; read one at a time and let
/// go once its sheet is written out) to the workbook at `path`, through a temporary file
/// renamed into place; the first error stops the writing.
pub fn write_workbook(
    path: &Path,
    tables: impl IntoIterator<Item = Result<Table, TableError>>,
) -> Result<(), TableError> {
    let xlsx = |e: XlsxError| TableError::io(path, "be written", e);
    flexbench_contracts::atomic::write_with(path, |tmp| -> Result<(), TableError> {
        let mut book = Workbook::new();
        // A fixed creation date (the workbook's only clock reading): the same tables give the
        // same bytes, as every other file of a run.
        let fixed = ExcelDateTime::from_ymd(2000, 1, 1).map_err(xlsx)?;
        book.set_properties(&DocProperties::new().set_creation_datetime(&fixed));
        for table in tables {
            let table = table?;
            let parts = table.height().div_ceil(SHEET_ROWS).max(1);
            for part in 0..parts {
                let sheet = book.add_worksheet_with_constant_memory();
                let name = match part {
                    0 => table.name().to_string(),
                    k => format!("{} {}", table.name(), k + 1),
                };
                sheet.set_name(&name).map_err(xlsx)?;
                let rows = part * SHEET_ROWS..((part + 1) * SHEET_ROWS).min(table.height());
                fill(sheet, &table, rows).map_err(xlsx)?;
            }
        }
        book.save(tmp).map_err(xlsx)
    })
    .map_err(|e| match e {
        flexbench_contracts::atomic::AtomicError::Fill(e) => e,
        flexbench_contracts::atomic::AtomicError::Io(p, e) => TableError::io(&p, "be written", e),
    })
}

/// One sheet: the names, the units, then the rows `rows` of `table` (row by row: the sheet is
/// written out as it fills).
fn fill(
    sheet: &mut Worksheet,
    table: &Table,
    rows: std::ops::Range<usize>,
) -> Result<(), XlsxError> {
    let bold = Format::new().set_bold();
    let italic = Format::new().set_italic();
    // Row by row: a sheet in constant memory keeps only the row being written.
    // Row by row (the names, then the units): a sheet in constant memory flushes a row once
    // the next is begun, and drops a later write to it.
    for (c, field) in table.fields().iter().enumerate() {
        sheet.write_string_with_format(0, c as u16, field.name(), &bold)?;
    }
    for (c, field) in table.fields().iter().enumerate() {
        sheet.write_string_with_format(1, c as u16, field.unit(), &italic)?;
    }
    sheet.set_freeze_panes(2, 0)?;
    for (r, k) in rows.enumerate() {
        let row = (r + 2) as u32;
        for (c, (_, col)) in table.columns().enumerate() {
            let c = c as u16;
            match col {
                Column::F64(v) if v[k].is_finite() => {
                    sheet.write_number(row, c, v[k])?;
                }
                Column::OptF64(v) => {
                    if let Some(x) = v[k].filter(|x| x.is_finite()) {
                        sheet.write_number(row, c, x)?;
                    }
                }
                Column::I64(v) => {
                    sheet.write_number(row, c, v[k] as f64)?;
                }
                Column::Str(v) => {
                    sheet.write_string(row, c, &v[k])?;
                }
                Column::F64(_) => {}
            }
        }
    }
    Ok(())
}
