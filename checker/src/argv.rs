//! Values read from command lines as their programs take them: a flag of the kubelet's argv
//! (`doctor`), and a setting of one of this project's providers from its config entry's `args`
//! or `env` (`doctor`, `doctor_fleet`, and the entry checks in `oidc_file` and `alibaba_entry`).
//! It names no other module of the checker, so every one of those can name it.

use kcp_kubelet_emulation::config;

/// A flag's value as the kubelet takes it: `--name=value` or `--name value`, the last one wins.
pub fn flag_value(argv: &[String], name: &str) -> Option<String> {
    let long = format!("--{name}");
    let mut found = None;
    let mut args = argv.iter().skip(1);
    while let Some(arg) = args.next() {
        if let Some(value) = arg.strip_prefix(&format!("{long}=")) {
            found = Some(value.to_owned());
        } else if *arg == long {
            found = args.next().cloned();
        }
    }
    found
}

/// A shared provider flag as the provider takes it: `--flag` in its `args` (either spelling,
/// the last wins), else the config's `env` entry for it (the last wins). `validate` reads oidc's
/// registries file through it (oidc_file.rs).
pub fn provider_setting(p: &config::Provider, flag: &str, env: &str) -> Option<String> {
    let argv: Vec<String> = std::iter::once(String::new())
        .chain(p.args.iter().cloned())
        .collect();
    flag_value(&argv, flag).or_else(|| {
        p.env
            .iter()
            .rev()
            .find(|(name, _)| name == env)
            .map(|(_, value)| value.clone())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_take_both_spellings_and_the_last_wins() {
        let argv: Vec<String> = [
            "kubelet",
            "--image-credential-provider-config=/a",
            "--image-credential-provider-config",
            "/b",
            "--config",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        assert_eq!(
            flag_value(&argv, "image-credential-provider-config").as_deref(),
            Some("/b")
        );
        assert_eq!(flag_value(&argv, "config"), None);
    }
}
