//! Writing files so that an earlier result is never lost: the content goes to a temporary file
//! beside the target, which is renamed over the target only once it is complete (a rename within
//! one directory is atomic on POSIX file systems). A failed or killed write leaves the earlier
//! file intact and at most a hidden temporary file, which is removed on error.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The temporary path used while writing `target`: hidden, in the same directory, keeping the
/// extension last (some writers, like image encoders, choose the format from it).
pub fn temporary_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = target
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let tmp = format!(".{name}.partial-{}{ext}", std::process::id());
    target.with_file_name(tmp)
}

/// Write `target` through `fill`, atomically: the target is replaced only if `fill` succeeds.
pub fn write_with<E>(
    target: &Path,
    fill: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), AtomicError<E>> {
    let tmp = temporary_path(target);
    if let Err(e) = fill(&tmp) {
        let _ = fs::remove_file(&tmp);
        return Err(AtomicError::Fill(e));
    }
    // Flush the data to disk before the rename makes it visible.
    if let Ok(f) = fs::File::open(&tmp) {
        let _ = f.sync_all();
    }
    fs::rename(&tmp, target).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        AtomicError::Io(target.to_path_buf(), e)
    })
}

/// Write bytes to `target` atomically.
pub fn write_bytes(target: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(target, |tmp| -> io::Result<()> {
        let mut f = fs::File::create(tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    })
    // The system's error as it is: every caller names the file in its own error.
    .map_err(|e| match e {
        AtomicError::Fill(e) | AtomicError::Io(_, e) => e,
    })
}

/// Put the complete folder `new` in the place of `target` (a stage's results), so that at every
/// instant `target` is either the whole old folder or the whole new one: on Linux one atomic
/// exchange of the two names (renameat2 with RENAME_EXCHANGE), then the old folder (now at
/// `new`) is removed; where there is no exchange, or `target` does not exist yet, a rename.
pub fn replace_dir(new: &Path, target: &Path) -> io::Result<()> {
    if target.exists() && exchange(new, target)? {
        return fs::remove_dir_all(new);
    }
    if target.exists() {
        // No atomic exchange here: the old folder aside, the new one in, the old one removed.
        let old = target.with_file_name(format!(
            ".{}.old",
            target
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        ));
        if old.exists() {
            fs::remove_dir_all(&old)?;
        }
        fs::rename(target, &old)?;
        fs::rename(new, target)?;
        return fs::remove_dir_all(&old);
    }
    fs::rename(new, target)
}

/// Exchange two paths atomically; Ok(false) where the system cannot.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> io::Result<bool> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
    };
    let (ca, cb) = (c(a)?, c(b)?);
    // SAFETY: both are valid NUL-terminated paths that outlive the call; renameat2 reads them
    // only during the call and touches no memory of ours.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    // Not supported by this file system or kernel: fall back to renames.
    match e.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP) => Ok(false),
        _ => Err(e),
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> io::Result<bool> {
    Ok(false)
}

/// A failed atomic write: the filling step's error, or the final rename's.
#[derive(Debug)]
pub enum AtomicError<E> {
    /// The content could not be produced or written.
    Fill(E),
    /// The finished file could not be moved into place.
    Io(PathBuf, io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_keeps_the_old_file() {
        let dir = std::env::temp_dir().join(format!("flexbench-atomic-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let target = dir.join("forces.csv");
        write_bytes(&target, b"old").unwrap();
        let r: Result<(), AtomicError<&str>> = write_with(&target, |tmp| {
            fs::write(tmp, b"half").unwrap();
            Err("failed half way")
        });
        assert!(matches!(r, Err(AtomicError::Fill("failed half way"))));
        assert_eq!(fs::read(&target).unwrap(), b"old");
        let left: Vec<_> = fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left behind");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_folder_is_replaced_whole() {
        let dir = std::env::temp_dir().join(format!("flexbench-atomic-dir-{}", std::process::id()));
        let (target, new) = (dir.join("fem"), dir.join(".fem.partial"));
        fs::create_dir_all(&target).unwrap();
        fs::create_dir_all(&new).unwrap();
        fs::write(target.join("old.csv"), b"old").unwrap();
        fs::write(new.join("new.csv"), b"new").unwrap();
        replace_dir(&new, &target).unwrap();
        let names: Vec<String> = fs::read_dir(&target)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["new.csv"]);
        assert!(!new.exists(), "the old folder removed");
        // Into a place that is empty: a plain rename.
        let (t2, n2) = (dir.join("report"), dir.join(".report.partial"));
        fs::create_dir_all(&n2).unwrap();
        replace_dir(&n2, &t2).unwrap();
        assert!(t2.is_dir() && !n2.exists());
        fs::remove_dir_all(&dir).unwrap();
    }
}
