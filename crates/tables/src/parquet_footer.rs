//! A check of a Parquet file's footer before polars reads it.
//!
//! polars-parquet 0.55 pre-sizes every Thrift list of the footer from the count the list
//! declares (`Vec::with_capacity`), so a damaged footer declaring 2^31 row groups makes it ask for
//! over 100 GB, and Rust aborts the process where no error can be returned (fuzzing found it:
//! `tests/bad-input/fuzz/tracks-parquet-2.parquet`). This walks the footer once with the Thrift
//! compact protocol (<https://github.com/apache/thrift/blob/master/doc/specs/thrift-compact-protocol.md>)
//! without allocating, and refuses a footer where a list, set, map or binary declares more
//! elements than bytes remain (each element takes at least one byte, so a valid footer never
//! does), or nests deeper than polars' own limit. No crate offers this check: the Thrift
//! decoders all allocate from the declared count.

use std::io::{Read, Seek, SeekFrom};

/// Deepest nesting of structs and lists accepted (polars' own skip depth).
const MAX_DEPTH: u32 = 64;

/// What is wrong with a footer, in words for the user.
pub type Damage = String;

/// Check the footer of the Parquet file `f`: magic bytes, footer length, and every declared
/// length against the bytes that remain. The file position is left at the start.
pub fn check<R: Read + Seek>(f: &mut R) -> Result<(), Damage> {
    let size = f
        .seek(SeekFrom::End(0))
        .map_err(|e| format!("cannot be read ({e})"))?;
    if size < 12 {
        return Err(format!(
            "the file is too short: {size} bytes (a Parquet file has at least 12)"
        ));
    }
    let mut tail = [0u8; 8];
    f.seek(SeekFrom::End(-8))
        .and_then(|_| f.read_exact(&mut tail))
        .map_err(|e| format!("cannot be read ({e})"))?;
    if &tail[4..] != b"PAR1" {
        return Err(
            "the file does not end with the Parquet magic bytes PAR1 (truncated, or not Parquet)"
                .into(),
        );
    }
    let len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if len + 12 > size {
        return Err(format!(
            "the file is damaged: its footer declares {len} bytes but the file has {size}"
        ));
    }
    let mut footer = vec![0u8; len as usize];
    f.seek(SeekFrom::End(-8 - len as i64))
        .and_then(|_| f.read_exact(&mut footer))
        .map_err(|e| format!("cannot be read ({e})"))?;
    f.seek(SeekFrom::Start(0))
        .map_err(|e| format!("cannot be read ({e})"))?;
    let mut w = Walker {
        buf: &footer,
        pos: 0,
    };
    w.value(STRUCT, 0).map_err(|e| {
        format!("the file is damaged: its footer (the file metadata) is inconsistent: {e}")
    })
}

/// Compact-protocol type codes used below.
const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;

/// A cursor over the footer's bytes.
struct Walker<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Walker<'_> {
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| format!("it ends inside a value (byte {})", self.pos))?;
        self.pos += 1;
        Ok(b)
    }

    fn skip(&mut self, n: u64) -> Result<(), String> {
        if n > self.remaining() as u64 {
            return Err(format!(
                "a value at byte {} declares {n} bytes, only {} remain",
                self.pos,
                self.remaining()
            ));
        }
        self.pos += n as usize;
        Ok(())
    }

    /// An unsigned LEB128 varint (at most 10 bytes).
    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!(
            "a varint longer than 10 bytes at byte {}",
            self.pos
        ))
    }

    /// A declared count of `n` elements: refused when more than the bytes that remain.
    fn count(&self, n: u64, what: &str) -> Result<(), String> {
        if n > self.remaining() as u64 {
            Err(format!(
                "a {what} at byte {} declares {n} elements, only {} bytes remain",
                self.pos,
                self.remaining()
            ))
        } else {
            Ok(())
        }
    }

    /// Skip one value of compact type `t` (inside a list, booleans take a byte).
    fn value(&mut self, t: u8, depth: u32) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("it nests deeper than {MAX_DEPTH} levels"));
        }
        match t {
            BOOL_TRUE | BOOL_FALSE | BYTE => self.skip(1),
            I16 | I32 | I64 => self.varint().map(|_| ()),
            DOUBLE => self.skip(8),
            BINARY => {
                let n = self.varint()?;
                self.skip(n)
            }
            LIST | SET => {
                let h = self.byte()?;
                let n = match h >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                let et = h & 0x0f;
                self.count(n, "list")?;
                if n > 0 && !(BOOL_TRUE..=STRUCT).contains(&et) {
                    return Err(format!(
                        "a list at byte {} has the unknown element type {et}",
                        self.pos
                    ));
                }
                (0..n).try_for_each(|_| self.value(et, depth + 1))
            }
            MAP => {
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                let kv = self.byte()?;
                self.count(n.saturating_mul(2), "map")?;
                (0..n).try_for_each(|_| {
                    self.value(kv >> 4, depth + 1)
                        .and_then(|_| self.value(kv & 0x0f, depth + 1))
                })
            }
            STRUCT => loop {
                let h = self.byte()?;
                let ft = h & 0x0f;
                if ft == 0 {
                    return Ok(());
                }
                if h >> 4 == 0 {
                    self.varint()?; // the field id, zigzag i16
                }
                match ft {
                    BOOL_TRUE | BOOL_FALSE => {} // a struct field's boolean is in its type
                    BYTE..=STRUCT => self.value(ft, depth + 1)?,
                    _ => {
                        return Err(format!(
                            "a field at byte {} has the unknown type {ft}",
                            self.pos
                        ))
                    }
                }
            },
            _ => Err(format!("the unknown type {t} at byte {}", self.pos)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A file with the footer bytes `meta`.
    fn file(meta: &[u8]) -> Cursor<Vec<u8>> {
        let mut v = b"PAR1".to_vec();
        v.extend_from_slice(meta);
        v.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        v.extend_from_slice(b"PAR1");
        Cursor::new(v)
    }

    #[test]
    fn a_footer_polars_wrote_passes() {
        let mut df = polars::df!("t" => [0.0, 1.0], "marker" => ["1", "2"]).unwrap();
        let mut buf = Vec::new();
        polars::prelude::ParquetWriter::new(&mut buf)
            .finish(&mut df)
            .unwrap();
        let mut c = Cursor::new(buf);
        assert_eq!(check(&mut c), Ok(()));
        assert_eq!(c.position(), 0);
    }

    #[test]
    fn a_list_longer_than_the_footer_is_refused() {
        // struct { 1: i32 = 1, 2: list<struct> of 2^31-1 elements } with nothing after.
        let meta = [0x15, 0x02, 0x19, 0xfc, 0xff, 0xff, 0xff, 0xff, 0x07];
        let e = check(&mut file(&meta)).unwrap_err();
        assert!(e.contains("declares 2147483647 elements"), "{e}");
        // The same list declaring 1 element, which is there: passes.
        let meta = [0x15, 0x02, 0x19, 0x1c, 0x00, 0x00];
        assert_eq!(check(&mut file(&meta)), Ok(()));
    }

    #[test]
    fn truncation_binary_lengths_and_depth_are_refused() {
        assert!(check(&mut Cursor::new(b"PAR1PAR1".to_vec()))
            .unwrap_err()
            .contains("too short"));
        assert!(check(&mut file(&[0x18, 0x7f]))
            .unwrap_err()
            .contains("declares 127 bytes"));
        assert!(check(&mut file(&[0x15]))
            .unwrap_err()
            .contains("ends inside"));
        let deep: Vec<u8> = std::iter::repeat_n(0x1c, 100)
            .chain(std::iter::repeat_n(0, 101))
            .collect();
        assert!(check(&mut file(&deep)).unwrap_err().contains("deeper"));
        let mut v = file(&[0x00]).into_inner();
        let n = v.len();
        v[n - 8..n - 4].copy_from_slice(&1000u32.to_le_bytes());
        assert!(check(&mut Cursor::new(v))
            .unwrap_err()
            .contains("declares 1000 bytes"));
    }
}
