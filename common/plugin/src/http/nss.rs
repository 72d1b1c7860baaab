//! glibc's name service switch in the static release binaries: host names are resolved by glibc's
//! built-in `files` and `dns` services only, never by the node's NSS modules.

/// Static glibc builds (release binaries) only: resolve host names with glibc's built-in `files`
/// (/etc/hosts) and `dns` (/etc/resolv.conf) services, whatever the node's /etc/nsswitch.conf says.
///
/// A statically linked glibc still reads nsswitch.conf and would dlopen the node's NSS modules for
/// any other service listed there (`resolve`, `myhostname`, `mdns4_minimal`…), pulling the node's
/// own, possibly different, glibc into the process; glibc warns that this needs the exact version
/// the binary was linked with. `files` and `dns` are part of libc itself since glibc 2.34, so with
/// this pin name resolution never leaves the binary. Runs before any client exists, hence before
/// any lookup.
#[cfg(all(target_os = "linux", target_env = "gnu", target_feature = "crt-static"))]
pub(super) fn pin_static_host_lookup() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        unsafe extern "C" {
            // Part of glibc's public ABI (GLIBC_2.2.5 on x86_64); meant for exactly this override.
            fn __nss_configure_lookup(
                db: *const std::ffi::c_char,
                service_line: *const std::ffi::c_char,
            ) -> std::ffi::c_int;
        }
        // SAFETY: two NUL-terminated static strings; no lookup is running yet (see above).
        let rc = unsafe { __nss_configure_lookup(c"hosts".as_ptr(), c"files dns".as_ptr()) };
        if rc != 0 {
            tracing::debug!("could not pin host lookups to files and dns; nsswitch.conf applies");
        }
    });
}
