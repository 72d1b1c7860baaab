//! What the static provider's integration tests share: the plugin as a config would run it.

use kcp_testkit::{Plugin, TempDir};

/// The password in the file every test's plugin reads.
pub const PASSWORD: &str = "s3cr3t-robot-password";

/// The plugin for `*.example.com` and `reg.example.org:5000` as `robot`, its password file in
/// `dir`, `cacheDuration` 30m.
pub fn plugin(dir: &TempDir) -> Plugin {
    let file = dir.path().join("password");
    std::fs::write(&file, format!("{PASSWORD}\n")).unwrap();
    Plugin::new(env!("CARGO_BIN_EXE_static-credential-provider"))
        .secret(PASSWORD)
        .args([
            "get-credentials".to_owned(),
            "--registry=*.example.com,reg.example.org:5000".to_owned(),
            "--username=robot".to_owned(),
            format!("--password-file={}", file.display()),
            "--cache-duration=30m".to_owned(),
        ])
}
