//! File reads where a missing file is an answer, not an error.

use std::io;

/// `Ok(None)` for a read that failed because the file does not exist; other failures stay
/// errors (each caller adds its own context).
pub(crate) fn if_exists<T>(read: io::Result<T>) -> io::Result<Option<T>> {
    match read {
        Ok(value) => Ok(Some(value)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_not_found_means_absent() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(super::if_exists(std::fs::read(dir.path().join("no"))).unwrap(), None);
        std::fs::write(dir.path().join("yes"), "x").unwrap();
        assert_eq!(
            super::if_exists(std::fs::read_to_string(dir.path().join("yes"))).unwrap(),
            Some("x".to_owned())
        );
        // A directory is there but cannot be read as a file: still an error.
        assert!(super::if_exists(std::fs::read(dir.path())).is_err());
    }
}
