//! Output: a human-readable report by default, one JSON document with `--output json`.
//!
//! Every command builds its result first (config, validate, explain, run modules) and only this
//! module decides how it looks, so the two formats always say the same thing.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::diagnosis::{BinaryFormat, BinaryState, Diagnosis, ProviderBinary, run_verdict};
use crate::explain::MatchReport;
use crate::run::{ProviderRun, Verdict};
use kcp_kubelet_emulation::config::{Config, LoadError};
use kcp_kubelet_emulation::validate::{Finding, Validation};

/// The output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// For people.
    Human,
    /// One JSON document, for scripts.
    Json,
}

fn findings_json(findings: &[Finding]) -> Value {
    Value::Array(
        findings
            .iter()
            .map(|f| json!({"provider": f.provider, "message": f.message}))
            .collect(),
    )
}

/// The config part shared by every command.
pub fn config_json(config: &Config) -> Value {
    json!({
        "files": config.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
        "directory": config.directory,
        "providers": config.providers.iter().map(|p| json!({
            "name": p.name,
            "apiVersion": p.api_version,
            "matchImages": p.match_images,
            "defaultCacheDuration": p.default_cache_duration.map(|d| d.to_string()),
            "tokenAttributes": p.token_attributes.is_some(),
            "source": p.source.display().to_string(),
        })).collect::<Vec<_>>(),
    })
}

/// `validate` as JSON.
pub fn validation_json(config: &Config, v: &Validation) -> Value {
    json!({
        "valid": v.valid(),
        "config": config_json(config),
        "kubeletError": v.kubelet_message(),
        "kubeletExit": v.kubelet_exit().map(|e| e.status),
        "errors": findings_json(&v.errors),
        "registrationErrors": findings_json(&v.registration),
        "registrationFatal": v.fatal.as_ref().map(|f| f.message.clone()),
        "argumentErrors": findings_json(&v.arguments),
        "warnings": findings_json(&v.warnings),
        "notes": findings_json(&v.notes),
    })
}

/// A config the kubelet cannot read.
pub fn load_error_json(e: &LoadError) -> Value {
    json!({
        "valid": false,
        "loadError": {
            "file": e.file.as_ref().map(|f| f.display().to_string()),
            "message": e.message,
        },
        "kubeletError": e.message,
        "errors": [],
        "warnings": [],
    })
}

/// `validate` for people.
pub fn validation_human(config: &Config, v: &Validation) -> String {
    let mut s = String::new();
    config_header(&mut s, config);
    for p in &config.providers {
        let errors = v
            .errors
            .iter()
            .chain(&v.registration)
            .chain(&v.arguments)
            .filter(|f| f.provider.as_deref() == Some(p.name.as_str()))
            .count();
        let _ = writeln!(
            s,
            "  {} {:?} ({}, {} matchImages, defaultCacheDuration {}){}",
            if errors == 0 { "ok " } else { "ERR" },
            p.name,
            if p.api_version.is_empty() {
                "no apiVersion"
            } else {
                p.api_version.as_str()
            },
            p.match_images.len(),
            p.default_cache_duration
                .map(|d| d.to_string())
                .unwrap_or_else(|| "unset".into()),
            if p.token_attributes.is_some() {
                ", service-account tokens"
            } else {
                ""
            }
        );
    }
    for f in &v.errors {
        let _ = writeln!(s, "error: {}", f.message);
    }
    for f in v.registration.iter().chain(&v.fatal) {
        let _ = writeln!(s, "error: {}", f.message);
    }
    for f in &v.arguments {
        let _ = writeln!(s, "error{}: {}", who(f), f.message);
    }
    for f in &v.warnings {
        let _ = writeln!(s, "warning{}: {}", who(f), f.message);
    }
    for f in &v.notes {
        let _ = writeln!(s, "note{}: {}", who(f), f.message);
    }
    if let Some(m) = v
        .kubelet_message()
        .or_else(|| v.fatal.as_ref().map(|f| f.message.clone()))
    {
        let _ = writeln!(s, "kubelet would log: {m}");
    }
    if v.fatal.is_some() {
        let _ = writeln!(
            s,
            "result: INVALID (the kubelet passes validation, then dies at registration with exit status 255)"
        );
    } else if v.valid() {
        let _ = writeln!(s, "result: valid");
    } else if v.ok() {
        let _ = writeln!(
            s,
            "result: INVALID (the kubelet starts, but every exec of a plugin that refuses its args fails)"
        );
    } else {
        let _ = writeln!(
            s,
            "result: INVALID (the kubelet exits 1: \"Failed to register CRI auth plugins\")"
        );
    }
    s
}

/// A config the kubelet cannot read, for people.
pub fn load_error_human(e: &LoadError) -> String {
    format!(
        "error: {e}\nresult: INVALID (the kubelet exits 1: \"Failed to register CRI auth plugins\")\n"
    )
}

fn who(f: &Finding) -> String {
    f.provider
        .as_ref()
        .map(|p| format!(" [{p}]"))
        .unwrap_or_default()
}

fn config_header(s: &mut String, config: &Config) {
    let files: Vec<String> = config
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    let _ = writeln!(
        s,
        "config: {} ({} provider{})",
        files.join(", "),
        config.providers.len(),
        if config.providers.len() == 1 { "" } else { "s" }
    );
}

/// `match` as JSON.
pub fn match_json(r: &MatchReport) -> Value {
    json!({
        "image": r.image,
        "normalized": r.normalized,
        "matching": r.matching(),
        "providers": r.providers.iter().map(|p| json!({
            "name": p.name,
            "matches": p.matches,
            "patterns": p.patterns.iter().map(|m| json!({
                "pattern": m.pattern,
                "matches": m.matches,
                "reason": m.reason,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// `match` for people.
pub fn match_human(r: &MatchReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "image: {} -> {}", r.image, r.normalized);
    for p in &r.providers {
        let _ = writeln!(
            s,
            "{} {}",
            if p.matches { "MATCH   " } else { "no match" },
            p.name
        );
        for m in &p.patterns {
            match &m.reason {
                None => {
                    let _ = writeln!(s, "    + {}", m.pattern);
                }
                Some(reason) => {
                    let _ = writeln!(s, "    - {}: {reason}", m.pattern);
                }
            }
        }
    }
    let matching = r.matching();
    if matching.is_empty() {
        let _ = writeln!(
            s,
            "result: no provider matches; the kubelet runs no plugin for this image"
        );
    } else {
        let _ = writeln!(s, "result: the kubelet runs {}", matching.join(", "));
    }
    s
}

/// `run` as JSON.
pub fn run_json(r: &MatchReport, runs: &[ProviderRun], usable: bool) -> Value {
    json!({
        "image": r.image,
        "normalized": r.normalized,
        "usable": usable,
        "matching": r.matching(),
        "providers": runs.iter().map(run_one_json).collect::<Vec<_>>(),
    })
}

fn run_one_json(run: &ProviderRun) -> Value {
    let (verdict, skipped) = match &run.verdict {
        Verdict::Skipped(why) => ("skipped", Some(why.clone())),
        Verdict::Failed => ("failed", None),
        Verdict::Accepted => ("accepted", None),
    };
    json!({
        "name": run.name,
        "verdict": verdict,
        "skipped": skipped,
        "usable": run.usable(),
        "argv": run.argv,
        "env": run.env.iter().map(|(k, v)| json!({"name": k, "value": v})).collect::<Vec<_>>(),
        "request": run.request,
        "exitCode": run.exit_code,
        "elapsedMs": u64::try_from(run.elapsed.as_millis()).unwrap_or(u64::MAX),
        "stderr": run.stderr,
        "stdout": run.stdout,
        "stdoutRedacted": run.redacted,
        "kubeletError": run.kubelet_error,
        "cause": run.cause,
        "auth": run.auth.iter().map(|a| json!({
            "key": a.key,
            "username": a.username,
            "password": a.password,
            "used": a.used,
            "reason": a.reason,
        })).collect::<Vec<_>>(),
        "keysUsed": run.keys_used,
        "cache": run.cache.as_ref().map(|c| json!({
            "keyType": c.key_type.as_str(),
            "key": c.key,
            "serviceAccountPart": c.service_account_part,
            "cached": c.duration.is_some(),
            "duration": c.duration.map(|d| d.to_string()),
            "durationSource": c.duration_source,
        })),
    })
}

/// `run` for people.
pub fn run_human(r: &MatchReport, runs: &[ProviderRun], usable: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "image: {} -> {}", r.image, r.normalized);
    if runs.is_empty() {
        let _ = writeln!(
            s,
            "no provider matches this image (see `match` for why); the kubelet pulls anonymously"
        );
    }
    for run in runs {
        let _ = writeln!(s, "\n== {} ==", run.name);
        if let Verdict::Skipped(why) = &run.verdict {
            let _ = writeln!(s, "not run: {why}");
            continue;
        }
        run_exec_human(&mut s, run);
        match &run.kubelet_error {
            Some(error) => run_failure_human(&mut s, run, error),
            None => run_answer_human(&mut s, run),
        }
    }
    let _ = writeln!(
        s,
        "\nresult: {}",
        if usable {
            "the kubelet would have credentials for this image"
        } else {
            "the kubelet would pull WITHOUT credentials from the plugins"
        }
    );
    s
}

/// One run's exec as the kubelet made it: argv, env, stdin, exit status and stderr.
fn run_exec_human(s: &mut String, run: &ProviderRun) {
    if !run.argv.is_empty() {
        let _ = writeln!(s, "exec:    {}", run.argv.join(" "));
    }
    for (k, v) in &run.env {
        let _ = writeln!(s, "env:     {k}={v}");
    }
    if !run.request.is_empty() {
        let _ = writeln!(s, "stdin:   {}", run.request);
    }
    let _ = writeln!(
        s,
        "exit:    {} after {} ms",
        run.exit_code
            .map(|c| c.to_string())
            .unwrap_or_else(|| "none (killed or not started)".into()),
        run.elapsed.as_millis()
    );
    if !run.stderr.is_empty() {
        let _ = writeln!(s, "stderr (the kubelet drops it on success):");
        for line in run.stderr.lines() {
            let _ = writeln!(s, "  | {line}");
        }
    }
}

/// A failed run: its stdout, the kubelet's message, the cause it hides and the effect.
fn run_failure_human(s: &mut String, run: &ProviderRun, error: &str) {
    if !run.stdout.is_empty() {
        let _ = writeln!(
            s,
            "stdout{}:",
            if run.redacted {
                " (string values, and every value under auth, shown as their length; --show-secrets shows them)"
            } else {
                ""
            }
        );
        for line in run.stdout.lines() {
            let _ = writeln!(s, "  | {line}");
        }
    }
    let _ = writeln!(s, "FAILED: the kubelet would log: {}", error.trim_end());
    if let Some(cause) = &run.cause {
        let _ = writeln!(s, "cause:   {cause}");
    }
    let _ = writeln!(
        s,
        "effect:  the plugin contributes nothing; the pull goes on with other credentials or anonymously"
    );
}

/// An accepted answer: each auth entry and whether the keyring uses it, the cache entry, and
/// whether the image gets credentials.
fn run_answer_human(s: &mut String, run: &ProviderRun) {
    let _ = writeln!(s, "response accepted by the kubelet's strict decoder");
    for a in &run.auth {
        let _ = writeln!(
            s,
            "  auth {} {:?}: username {:?}, password {}{}",
            if a.used { "USED  " } else { "unused" },
            a.key,
            a.username,
            a.password,
            a.reason
                .as_ref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        );
    }
    if run.auth.is_empty() {
        let _ = writeln!(s, "  no auth entries: no credentials from this plugin");
    }
    if let Some(c) = &run.cache {
        let sa = c
            .service_account_part
            .as_ref()
            .map(|p| format!(" + {p}"))
            .unwrap_or_default();
        match c.duration {
            Some(d) => {
                let _ = writeln!(
                    s,
                    "cache:   {} key {:?}{sa}, kept {d} (from {})",
                    c.key_type.as_str(),
                    c.key,
                    c.duration_source
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "cache:   not cached ({} is 0s); the plugin runs on every pull",
                    c.duration_source
                );
            }
        }
    }
    let _ = writeln!(
        s,
        "{}",
        if run.usable() {
            "credentials: usable for this image"
        } else {
            "credentials: NONE apply to this image"
        }
    );
}

/// `doctor` as JSON.
pub fn doctor_json(d: &Diagnosis) -> Value {
    let judged = match &d.judged {
        None => Value::Null,
        Some(Ok((config, v))) => validation_json(config, v),
        Some(Err(e)) => load_error_json(e),
    };
    json!({
        "healthy": d.healthy(),
        "hostRoot": d.host_root.display().to_string(),
        "kubelet": d.kubelet.as_ref().map(|k| json!({
            "pid": k.pid,
            "argv": k.argv,
            "exe": k.exe.as_ref().map(|e| e.display().to_string()),
            "embeddedInK3s": k.embedded_k3s,
        })),
        "kubeletVersion": d.version.as_ref().map(|(v, _)| v),
        "kubeletVersionFrom": d.version.as_ref().map(|(_, from)| from),
        "imageCredentialProviderConfig": d.config_path,
        "imageCredentialProviderBinDir": d.bin_dir,
        "featureGates": d.feature_gates,
        "imagePullCredentialsVerificationPolicy": d.pull_credentials_policy,
        "providers": d.providers.iter().map(provider_binary_json).collect::<Vec<_>>(),
        "problems": findings_json(&d.problems),
        "warnings": findings_json(&d.warnings),
        "validation": judged,
        "rbac": d.rbac,
        "fleet": d.fleet,
        "images": d.images.iter().map(|i| json!({
            "image": i.matched.image,
            "normalized": i.matched.normalized,
            "matching": i.matched.matching(),
            "result": i.verdict(),
            "serviceAccountToken": "none: doctor cannot mint a pod's service-account token",
            "providers": i.runs.iter().map(|run| {
                let mut one = run_one_json(run);
                one["result"] = json!(run_verdict(run));
                one
            }).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// One provider of the kubelet's config and its binary, as `doctor --output json` lists them.
fn provider_binary_json(p: &ProviderBinary) -> Value {
    let (format, architecture, interpreter) = match &p.format {
        None => (None, None, None),
        Some(BinaryFormat::Elf(m)) => (Some("ELF"), Some(m.name()), None),
        Some(BinaryFormat::Pe(m)) => (Some("PE"), Some(m.name()), None),
        Some(BinaryFormat::Script(line)) => (Some("script"), None, Some(line.clone())),
        Some(BinaryFormat::Unknown) => (Some("unknown"), None, None),
    };
    json!({
        "name": p.name,
        "binary": p.binary,
        "found": p.state != BinaryState::Missing,
        "executable": p.state == BinaryState::Executable,
        "state": binary_state_human(&p.state),
        "format": format,
        "architecture": architecture,
        "interpreter": interpreter,
        "matchImages": p.match_images,
    })
}

/// `doctor` for people.
pub fn doctor_human(d: &Diagnosis) -> String {
    let mut s = String::new();
    doctor_kubelet_human(&mut s, d);
    for p in &d.providers {
        let _ = writeln!(s, "provider {}: {}", p.name, provider_binary_human(p));
    }
    for f in &d.problems {
        let _ = writeln!(s, "problem{}: {}", who(f), f.message);
    }
    for f in &d.warnings {
        let _ = writeln!(s, "warning{}: {}", who(f), f.message);
    }
    doctor_images_human(&mut s, d);
    for line in &d.fleet {
        let _ = writeln!(s, "fleet: {line}");
    }
    if let Some(rbac) = &d.rbac {
        let _ = writeln!(
            s,
            "RBAC the nodes need for their token audiences (apply with kubectl apply -f -):\n{rbac}"
        );
    }
    let _ = writeln!(
        s,
        "result: {}",
        if d.healthy() {
            "healthy"
        } else {
            "BROKEN (the next pull fails or goes anonymous)"
        }
    );
    s
}

/// The kubelet found, its version, credential-provider flags and feature gates.
fn doctor_kubelet_human(s: &mut String, d: &Diagnosis) {
    match &d.kubelet {
        Some(k) => {
            let _ = writeln!(
                s,
                "kubelet: pid {} ({}){}",
                k.pid,
                k.argv.first().map(String::as_str).unwrap_or(""),
                if k.embedded_k3s {
                    ", embedded in k3s"
                } else {
                    ""
                }
            );
        }
        None => {
            let _ = writeln!(s, "kubelet: not found under {}", d.host_root.display());
        }
    }
    if let Some((v, from)) = &d.version {
        let _ = writeln!(s, "version: {v} (from {from})");
    }
    for (label, value) in [
        ("--image-credential-provider-config", &d.config_path),
        ("--image-credential-provider-bin-dir", &d.bin_dir),
        (
            "imagePullCredentialsVerificationPolicy",
            &d.pull_credentials_policy,
        ),
    ] {
        if let Some(value) = value {
            let _ = writeln!(s, "{label}: {value}");
        }
    }
    if !d.feature_gates.is_empty() {
        let gates: Vec<String> = d
            .feature_gates
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(s, "feature gates: {}", gates.join(","));
    }
}

/// A provider's binary on one line: where, whether the kubelet can exec it, what it is built
/// for, and the images it is run for.
fn provider_binary_human(p: &ProviderBinary) -> String {
    let format = match &p.format {
        None => String::new(),
        Some(BinaryFormat::Elf(m)) => format!(", {}", m.name()),
        Some(BinaryFormat::Pe(m)) => format!(", {} (Windows PE)", m.name()),
        Some(BinaryFormat::Script(line)) => format!(", script (#!{line})"),
        Some(BinaryFormat::Unknown) => ", neither ELF, PE nor a #! script".to_owned(),
    };
    let matches = if p.match_images.is_empty() {
        "no matchImages".to_owned()
    } else {
        format!("matches {}", p.match_images.join(", "))
    };
    format!(
        "{}: {}{format}; {matches}",
        p.binary,
        binary_state_human(&p.state)
    )
}

/// Whether the kubelet's start-up check takes a provider's binary, in words.
fn binary_state_human(state: &BinaryState) -> String {
    match state {
        BinaryState::Executable => "executable".to_owned(),
        BinaryState::NotExecutable => "not executable".to_owned(),
        BinaryState::Directory => "a directory".to_owned(),
        BinaryState::Missing => "not found".to_owned(),
        BinaryState::Unreadable(e) => format!("cannot be inspected: {e}"),
    }
}

/// Each `--image`: its verdict and each matching provider's run.
fn doctor_images_human(s: &mut String, d: &Diagnosis) {
    for i in &d.images {
        let _ = writeln!(
            s,
            "image {} -> {}: {} (run without a service-account token: doctor cannot mint one)",
            i.matched.image,
            i.matched.normalized,
            i.verdict()
        );
        if i.runs.is_empty() {
            let _ = writeln!(s, "  no provider matches: the kubelet pulls it anonymously");
        }
        for run in &i.runs {
            let detail = match (&run.verdict, &run.kubelet_error) {
                (Verdict::Skipped(why), _) => why.clone(),
                (_, Some(error)) => format!("the kubelet would log: {}", error.trim_end()),
                _ if run.usable() => format!("credentials for {}", run.keys_used.join(", ")),
                _ => "no credentials from it apply to this image".to_owned(),
            };
            let _ = writeln!(s, "  {}: {}: {detail}", run.name, run_verdict(run));
        }
    }
}
