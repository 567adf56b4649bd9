//! What a test makes for itself outside any server: names no earlier run
//! has used (for namespaces, CRDs, temporary folders) and executable
//! scripts (credential plugins).

/// A suffix for names no earlier run has used: the process id and the
/// clock's nanoseconds.
pub fn unique_suffix() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{}-{}", std::process::id() % 100000, nanos % 100000)
}

/// Writes an executable shell script (a credential plugin) to `path`.
pub fn write_script(path: &std::path::Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}
