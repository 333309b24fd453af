//! Files and directories only the service's own user may read.
//!
//! The data directory holds the SQLite database (every company's books), the secret key that
//! signs download links, and the outbox, whose mails carry generated passwords in clear text.
//! Created with the usual modes (0755 directories, 0644 files) any local user could read
//! them; these helpers create directories 0700 and files 0600 (on Unix), whatever the umask.
//! `invoicing` also sets its umask to 077 at start, so files made by libraries (SQLite's
//! `-wal` and `-shm`, objects of a `file://` store) are private too.

use std::path::Path;

/// Creates `dir` and its missing parents, each readable by the owner only. Existing
/// directories are left as they are (an operator may have chosen their modes).
pub fn create_dir_all(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Options that create a file readable and writable by the owner only (mode 0600).
pub fn file_options() -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
}

/// Creates `path` empty with mode 0600 unless it exists.
pub fn touch(path: &Path) -> std::io::Result<()> {
    match file_options().write(true).create_new(true).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}
