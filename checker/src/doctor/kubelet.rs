//! The running kubelet as `doctor` finds it: its process under the host root, the
//! credential-provider flags (or k3s's fixed paths), the feature gates and pull policy of its
//! `--config` file, and its version from its own binary.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kcp_kubelet::yaml11::{self, Node};
use kcp_kubelet_emulation::validate::Finding;

use super::binaries::machine_of;
use super::{DoctorArgs, under};
use crate::argv::flag_value;
use crate::diagnosis::{Diagnosis, KubeletProcess};
use crate::install::{Machine, resolve_under};

/// The first process (lowest pid) that is a kubelet: its argv[0] is `kubelet`, or it is k3s's
/// `server`/`agent`, which embeds one.
pub(super) fn find_kubelet(root: &Path) -> Option<KubeletProcess> {
    let mut pids: Vec<(u64, String)> = std::fs::read_dir(root.join("proc"))
        .ok()?
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            Some((name.parse().ok()?, name))
        })
        .collect();
    pids.sort();
    let mut k3s = None;
    for (_, pid) in pids {
        let dir = root.join("proc").join(&pid);
        let Ok(raw) = std::fs::read(dir.join("cmdline")) else {
            continue;
        };
        let argv: Vec<String> = raw
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>();
        let argv: Vec<String> = match argv.iter().rposition(|a| !a.is_empty()) {
            Some(last) => argv[..=last].to_vec(),
            None => continue,
        };
        let base = |a: &str| {
            Path::new(a)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        };
        let exe = std::fs::read_link(dir.join("exe")).ok();
        let process = KubeletProcess {
            pid: pid.clone(),
            argv: argv.clone(),
            exe,
            embedded_k3s: false,
        };
        match base(&argv[0]).as_deref() {
            Some("kubelet" | "kubelet.exe") => return Some(process),
            Some("k3s")
                if k3s.is_none()
                    && matches!(argv.get(1).map(String::as_str), Some("server" | "agent")) =>
            {
                k3s = Some(KubeletProcess {
                    embedded_k3s: true,
                    ..process
                });
            }
            _ => {}
        }
    }
    k3s
}

/// `--image-credential-provider-config` and `--image-credential-provider-bin-dir` as the
/// kubelet runs with them; k3s passes both to its kubelet only when its fixed paths exist.
pub(super) fn provider_flags(root: &Path, kubelet: &KubeletProcess, d: &mut Diagnosis) {
    d.config_path = flag_value(&kubelet.argv, "image-credential-provider-config");
    d.bin_dir = flag_value(&kubelet.argv, "image-credential-provider-bin-dir");
    if kubelet.embedded_k3s && d.config_path.is_none() && d.bin_dir.is_none() {
        // k3s passes both flags to its kubelet only when these exist.
        let (config, bin) = (
            "/var/lib/rancher/credentialprovider/config.yaml",
            "/var/lib/rancher/credentialprovider/bin",
        );
        if under(root, config).is_some_and(|p| p.is_file())
            && under(root, bin).is_some_and(|p| p.is_dir())
        {
            d.config_path = Some(config.to_owned());
            d.bin_dir = Some(bin.to_owned());
        }
    }
}

/// `Name=bool,...` into `gates`, later values winning.
pub(super) fn merge_gates(text: &str, gates: &mut BTreeMap<String, bool>) -> Result<(), String> {
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, value) = item
            .split_once('=')
            .and_then(|(n, v)| Some((n.trim(), v.trim().parse::<bool>().ok()?)))
            .ok_or_else(|| format!("--feature-gates: expected Name=true|false, got {item:?}"))?;
        gates.insert(name.to_owned(), value);
    }
    Ok(())
}

/// `featureGates` and `imagePullCredentialsVerificationPolicy` of the `--config` file.
pub(super) fn read_kubelet_configuration(root: &Path, kubelet: &KubeletProcess, d: &mut Diagnosis) {
    let Some(path) = flag_value(&kubelet.argv, "config") else {
        return;
    };
    let file = under(root, &path).unwrap_or_else(|| root.join(&path));
    let parsed = std::fs::read_to_string(&file)
        .map_err(|e| e.to_string())
        .and_then(|text| yaml11::parse(&text));
    let doc = match parsed {
        Ok(doc) => doc,
        Err(e) => {
            d.warnings.push(Finding {
                provider: None,
                message: format!("cannot read the kubelet's --config {path}: {e}; its featureGates are not taken into account"),
            });
            return;
        }
    };
    let Node::Map(map) = &doc.root else {
        return;
    };
    if let Some(Node::Map(gates)) = yaml11::get(map, "featureGates") {
        for entry in gates {
            if let (Ok(name), Node::Bool(on)) = (yaml11::key_string(&entry.key), &entry.value) {
                d.feature_gates.insert(name, *on);
            }
        }
    }
    if let Some(Node::Str(policy)) = yaml11::get(map, "imagePullCredentialsVerificationPolicy") {
        d.pull_credentials_policy = Some(policy.clone());
    }
}

/// The kubelet's version from `<exe> --version` (`Kubernetes v1.32.4`, k3s: `k3s version
/// v1.32.4+k3s1`), run only when this machine can run it.
pub(super) fn ask_version(
    root: &Path,
    kubelet: &KubeletProcess,
    args: &DoctorArgs,
    warnings: &mut Vec<Finding>,
) -> Option<(String, String)> {
    let mut warn = |why: String| {
        warnings.push(Finding {
            provider: None,
            message: format!(
                "{why}; judged as the newest kubelet (pass --kubelet-version to say which)"
            ),
        });
        None
    };
    let Some(exe) = &kubelet.exe else {
        return warn(format!("cannot read /proc/{}/exe", kubelet.pid));
    };
    let Some(path) = resolve_under(root, exe) else {
        return warn(format!("cannot find {} under the host root", exe.display()));
    };
    if let Some(m) = machine_of(&path)
        && Some(m) != own_machine()
    {
        return warn(format!(
            "the kubelet binary is built for {}, which this checker cannot run",
            m.name()
        ));
    }
    let timeout = args
        .version_timeout
        .to_std()
        .unwrap_or(Duration::from_secs(10));
    let command = format!("{} --version", exe.display());
    match run_with_timeout(&path, timeout) {
        Ok(out) => match version_in(&out) {
            Some(v) => Some((v, command)),
            None => warn(format!("{command} printed no version: {:?}", out.trim())),
        },
        Err(e) => warn(format!("{command}: {e}")),
    }
}

/// `1.N` from the first `v1.N` in `text`.
fn version_in(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || c == '+' || c == '-')
        .filter_map(|word| word.strip_prefix("v1."))
        .find_map(|rest| {
            let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
            (!minor.is_empty()).then(|| format!("1.{minor}"))
        })
}

/// Runs `path --version`, killing it after `timeout`.
fn run_with_timeout(path: &Path, timeout: Duration) -> Result<String, String> {
    let mut child = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {timeout:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    }
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout.read_to_string(&mut out).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// This checker's own architecture, as an ELF machine.
fn own_machine() -> Option<Machine> {
    let m = match std::env::consts::ARCH {
        "x86" => 3,
        "arm" => 40,
        "x86_64" => 62,
        "aarch64" => 183,
        "riscv64" => 243,
        "powerpc64" => 21,
        "s390x" => 22,
        _ => return None,
    };
    Some(Machine(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_kubelet_and_k3s_banners() {
        assert_eq!(version_in("Kubernetes v1.32.4\n").as_deref(), Some("1.32"));
        assert_eq!(
            version_in("k3s version v1.31.2+k3s1 (abc)\ngo version go1.22").as_deref(),
            Some("1.31")
        );
        assert_eq!(version_in("nothing"), None);
    }
}
