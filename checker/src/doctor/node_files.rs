//! Paths a provider writes on the node, as its `args` or `env` set them: its token cache
//! directory and its metrics file, each checked as root (the kubelet's plugins' user) will find
//! them. Neither makes a pull fail, so what is wrong with them is a warning.

use std::path::Path;

use kcp_kubelet_emulation::config::Config;

#[cfg(unix)]
use crate::argv::provider_setting;
use crate::diagnosis::Diagnosis;

/// Providers whose token cache directory (`--token-cache-dir`, or the env the provider reads)
/// cannot be used: the provider then fetches a new token on every exec. The kubelet runs plugins
/// as root, so the directory must be root's; a symlink is not followed.
#[cfg(unix)]
pub(super) fn token_caches(root: &Path, config: &Config, d: &mut Diagnosis) {
    use std::os::unix::fs::MetadataExt as _;
    for p in &config.providers {
        let Some(dir) =
            provider_setting(p, "token-cache-dir", "CREDENTIAL_PROVIDER_TOKEN_CACHE_DIR")
        else {
            continue;
        };
        let on_host = root.join(dir.trim_start_matches('/'));
        let reason = match std::fs::symlink_metadata(&on_host) {
            Err(_) => None,
            Ok(meta) if !meta.is_dir() => {
                Some("it is not a directory (a symlink is not followed)".to_owned())
            }
            Ok(meta) if meta.uid() != 0 => Some(format!(
                "it is owned by uid {}, not by root, whom the kubelet runs plugins as",
                meta.uid()
            )),
            Ok(_) => None,
        };
        if let Some(reason) = reason {
            d.warning(
                Some(&p.name),
                format!("token cache directory {dir}: {reason}; the provider fetches a new token on every exec"),
            );
        }
    }
}

#[cfg(not(unix))]
pub(super) fn token_caches(_root: &Path, _config: &Config, _d: &mut Diagnosis) {}

/// Providers whose metrics file (`--metrics-file`, or the env the provider reads) cannot be
/// written: its directory must exist as a real directory root can write in (the kubelet runs
/// plugins as root), and the file, if there, must be a regular file. The provider then loses
/// its metrics but still answers, so these are warnings.
#[cfg(unix)]
pub(super) fn metrics_files(root: &Path, config: &Config, d: &mut Diagnosis) {
    use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
    for p in &config.providers {
        let Some(file) = provider_setting(p, "metrics-file", "CREDENTIAL_PROVIDER_METRICS_FILE")
        else {
            continue;
        };
        let node_file = Path::new(&file);
        let reason = if !node_file.is_absolute() {
            Some(
                "it is not an absolute path, so it depends on the kubelet's working directory"
                    .to_owned(),
            )
        } else {
            let dir = node_file.parent().unwrap_or(Path::new("/"));
            let on_host = |p: &Path| root.join(p.strip_prefix("/").unwrap_or(p));
            match std::fs::symlink_metadata(on_host(dir)) {
                Err(e) => Some(format!(
                    "its directory {} cannot be used: {e}",
                    dir.display()
                )),
                Ok(meta) if !meta.is_dir() => Some(format!(
                    "its directory {} is not a directory (a symlink is not followed)",
                    dir.display()
                )),
                Ok(meta) if meta.uid() != 0 => Some(format!(
                    "its directory {} is owned by uid {}, not by root, whom the kubelet runs plugins as",
                    dir.display(),
                    meta.uid()
                )),
                Ok(_) if read_only(&on_host(dir)) => Some(format!(
                    "its directory {} is on a read-only filesystem",
                    dir.display()
                )),
                Ok(_) => match std::fs::symlink_metadata(on_host(node_file)) {
                    Ok(meta) if !meta.file_type().is_file() => Some(format!(
                        "it is a {}, not a regular file",
                        if meta.file_type().is_symlink() {
                            "symlink"
                        } else if meta.file_type().is_fifo() {
                            "FIFO"
                        } else if meta.is_dir() {
                            "directory"
                        } else {
                            "special file"
                        }
                    )),
                    _ => None,
                },
            }
        };
        if let Some(reason) = reason {
            d.warning(
                Some(&p.name),
                format!("metrics file {file}: {reason}; the provider still answers, but its metrics are not written"),
            );
        }
    }
}

#[cfg(not(unix))]
pub(super) fn metrics_files(_root: &Path, _config: &Config, _d: &mut Diagnosis) {}

/// True when `dir` is on a filesystem mounted read-only (where even root cannot write).
#[cfg(unix)]
fn read_only(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `path` is a NUL-terminated string and `stat` a zeroed struct statvfs fills.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the duration of the call.
    let rc = unsafe { libc::statvfs(path.as_ptr(), &mut stat) };
    rc == 0 && stat.f_flag & libc::ST_RDONLY != 0
}
