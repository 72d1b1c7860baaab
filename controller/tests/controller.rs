//! The controller against a recording fake of the API server (Secret and Lease get/update) and
//! the real `ecr-credential-provider` against a fake ECR. Nothing here is timed: a test waits for
//! an event (a request the fakes recorded, a log line) and fails only if it never comes.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;

use kcp_testkit::{TempDir, unix_now};
use serde_json::{Value, json};
use support::*;

/// Every stderr line is one leveled log entry: `<RFC 3339 time> <LEVEL> ...`.
fn assert_leveled(stderr: &str) {
    for line in stderr.lines() {
        let mut words = line.split_whitespace();
        let (time, level) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        assert!(
            time.ends_with('Z') && ["ERROR", "WARN", "INFO", "DEBUG", "TRACE"].contains(&level),
            "not a log entry: {line:?}"
        );
    }
}

fn body(request: &kcp_testkit::fake::RecordedRequest) -> Value {
    serde_json::from_slice(&request.body).unwrap()
}

#[test]
fn once_publishes_exactly_the_current_entries_under_the_shared_identity() {
    let w = World::new("once", 3600);
    // Left by someone else: a key that is no entry, and an expired entry.
    let expired = "0123456789abcdef0123456789abcdef.json".to_owned();
    let now = unix_now();
    w.api.set_secret_data(&BTreeMap::from([
        ("stray".to_owned(), b"not an entry".to_vec()),
        (
            expired.clone(),
            entry_bytes("old-expired-token-value", now - 7200, now - 3600),
        ),
    ]));
    let before = w.api.object(Kind::Secret)["metadata"]["resourceVersion"].clone();

    let (code, stderr) = once(w.command());
    assert_eq!(code, 0, "{stderr}");

    let expected_name = TargetSpec::ecr(&w.ecr).shared_stem_file(w.dir.path());
    let data = w.api.secret_data();
    assert_eq!(
        data.keys().collect::<Vec<_>>(),
        [&expected_name],
        "exactly the target's entry, under a node's file name"
    );
    let entry = parse_entry(&data[&expected_name]);
    assert_eq!(entry["username"], "AWS");
    assert_eq!(entry["password"], "once-1-ecr-token-value");
    assert!(entry["expiresAt"].as_u64().unwrap() >= now + 3600);
    // Read, then one update carrying the resourceVersion that was read.
    let puts = w.api.calls(Kind::Secret, "PUT");
    assert_eq!(puts.len(), 1);
    assert_eq!(body(&puts[0])["metadata"]["resourceVersion"], before);
    assert_eq!(body(&puts[0])["type"], "Opaque");
    assert_eq!(w.api.calls(Kind::Secret, "GET").len(), 1);
    // The Lease: taken as ME, then released (no holder, as client-go's ReleaseOnCancel). A slow
    // machine (qemu) may see renewals by ME in between; nothing else.
    let lease_puts = w.api.calls(Kind::Lease, "PUT");
    assert!(
        lease_puts.len() >= 2,
        "take and release: {}",
        lease_puts.len()
    );
    let taken = &body(&lease_puts[0])["spec"];
    assert_eq!(taken["holderIdentity"], ME);
    assert_eq!(taken["leaseDurationSeconds"], 6);
    assert_eq!(taken["leaseTransitions"], 1);
    for renewal in &lease_puts[1..lease_puts.len() - 1] {
        let spec = &body(renewal)["spec"];
        assert_eq!(spec["holderIdentity"], ME, "{spec}");
        assert_eq!(spec["acquireTime"], taken["acquireTime"], "{spec}");
        assert_eq!(spec["leaseTransitions"], 1, "{spec}");
    }
    assert!(
        w.api.lease_spec()["holderIdentity"].is_null(),
        "{}",
        w.api.lease_spec()
    );
    assert_eq!(w.api.lease_spec()["leaseDurationSeconds"], 1);
    assert!(
        stderr.contains(&format!("Secret {NS}/{SECRET} updated: 1 entry")),
        "{stderr}"
    );
    // The keys that match no target are named once (no value).
    let dropped = format!(
        "removed 2 key(s) from the Secret {NS}/{SECRET} that match no configured target: {expired}, stray"
    );
    assert_eq!(stderr.matches(&dropped).count(), 1, "{stderr}");
    assert_leveled(&stderr);
    // Nothing else was asked of the API server.
    assert!(
        w.api
            .requests()
            .iter()
            .all(|r| r.path() == secret_path() || r.path() == lease_path())
    );
}

#[test]
fn a_second_round_with_nothing_changed_writes_nothing() {
    let w = World::new("same", 3600);
    assert_eq!(once(w.command()).0, 0);
    let published = w.api.secret_data();
    // A working provider would hand out a new token; a failing one leaves the entry as it was, so
    // this round finds the Secret already right and only reads it.
    w.ecr.set_failing(true);
    let (code, stderr) = once(w.command());
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(w.api.secret_data(), published);
    assert_eq!(
        w.api.calls(Kind::Secret, "PUT").len(),
        1,
        "no update when the data is already right"
    );
    assert_eq!(w.api.calls(Kind::Secret, "GET").len(), 2);
}

#[test]
fn a_conflict_on_the_secret_update_is_read_again_and_retried() {
    let w = World::new("conflict", 3600);
    w.api.fault(Kind::Secret, "PUT", 1, 409);
    let (code, stderr) = once(w.command());
    assert_eq!(code, 0, "{stderr}");
    let secret_calls: Vec<String> = w
        .api
        .requests()
        .iter()
        .filter(|r| r.path() == secret_path())
        .map(|r| r.method.clone())
        .collect();
    assert_eq!(secret_calls, ["GET", "PUT", "GET", "PUT"]);
    assert_eq!(w.api.secret_data().len(), 1);
    // Read again inside the same write (an INFO line), not a failed write retried later (WARN).
    let line = stderr
        .lines()
        .find(|l| l.contains("conflict (409)"))
        .unwrap_or_default();
    assert!(line.contains("INFO"), "{stderr}");
}

#[test]
fn a_lease_held_by_a_live_holder_is_left_alone_and_nothing_is_written() {
    let w = World::new("held", 3600);
    w.api.live_holder(Some("controller-b"));
    let (code, stderr) = once(w.command());
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("is held by controller-b, which keeps renewing it"),
        "{stderr}"
    );
    assert!(
        w.api.calls(Kind::Lease, "PUT").is_empty(),
        "the Lease was not written"
    );
    assert!(
        w.api.calls(Kind::Secret, "PUT").is_empty(),
        "the Secret was not written"
    );
    assert_eq!(
        w.ecr.calls(),
        0,
        "no token fetched by a replica that is not the leader"
    );
}

#[test]
fn a_holder_that_stopped_renewing_is_taken_over() {
    let w = World::new("takeover", 3600);
    // Its renewTime says "just now" by its own (skewed) clock: only our own observation counts.
    let future = micro_time(unix_now() + 3600);
    w.api.edit(Kind::Lease, |l| {
        l["spec"] = json!({"holderIdentity": "controller-b", "leaseDurationSeconds": 1,
                           "acquireTime": future, "renewTime": future, "leaseTransitions": 4});
    });
    let (code, stderr) = once(w.command());
    assert_eq!(code, 0, "{stderr}");
    let taken = body(&w.api.calls(Kind::Lease, "PUT")[0])["spec"].clone();
    assert_eq!(taken["holderIdentity"], ME);
    assert_eq!(taken["leaseTransitions"], 5);
    assert!(
        w.api.calls(Kind::Lease, "GET").len() >= 2,
        "watched the record before taking it"
    );
    assert_eq!(w.api.secret_data().len(), 1);
}

#[test]
fn a_missing_lease_or_secret_names_the_manifests() {
    for (kind, flag) in [
        (Kind::Lease, "--lease-name"),
        (Kind::Secret, "--secret-name"),
    ] {
        let w = World::new("missing", 3600);
        for n in 1..=100 {
            w.api.fault(kind, "GET", n, 404);
        }
        let (code, stderr) = once(w.command());
        assert_eq!(code, 1, "{stderr}");
        assert!(
            stderr.contains("not found (404): the manifests in deploy/ create it"),
            "{stderr}"
        );
        assert!(stderr.contains(flag), "{stderr}");
        assert!(w.api.calls(Kind::Secret, "PUT").is_empty());
    }
}

#[test]
fn a_failed_refresh_keeps_the_published_entry() {
    let w = World::new("keep", 3600);
    assert_eq!(once(w.command()).0, 0);
    let published = w.api.secret_data();
    assert_eq!(published.len(), 1);
    let name = published.keys().next().unwrap().clone();

    w.ecr.set_failing(true);
    let (code, stderr) = once(w.command());
    assert_eq!(code, 1, "a target failed: {stderr}");
    assert!(stderr.contains("target ecr-prod: the provider"), "{stderr}");
    assert!(
        stderr.contains(&format!("keeping entry {name}")),
        "{stderr}"
    );
    assert_eq!(
        w.api.secret_data(),
        published,
        "the old entry stays published"
    );
}

#[test]
fn api_faults_are_logged_retried_and_survived() {
    let w = World::new("faults", 3600);
    w.api.fault(Kind::Lease, "PUT", 1, 403);
    w.api.fault(Kind::Lease, "GET", 2, 500);
    w.api.fault(Kind::Secret, "GET", 1, 401);
    w.api.fault(Kind::Secret, "PUT", 1, 403);
    w.api.fault(Kind::Secret, "PUT", 2, 500);
    let mut controller = Controller::start(w.command());
    controller.wait_until("the Secret written", |_| !w.api.secret_data().is_empty());
    assert!(controller.running());
    let (status, stderr) = controller.terminate();
    assert!(status.success(), "{status}: {stderr}");
    for expected in [
        format!(
            "update leases {NS}/{LEASE}: forbidden (403): the controller's Role needs the rule verbs [update] on leases with resourceNames [{LEASE}]"
        ),
        format!(
            "get secrets {NS}/{SECRET}: the API server refused the controller's credentials (401 Unauthorized)"
        ),
        format!(
            "update secrets {NS}/{SECRET}: forbidden (403): the controller's Role needs the rule verbs [update] on secrets with resourceNames [{SECRET}]"
        ),
        format!(
            "update secrets {NS}/{SECRET}: the API server answered 500 InternalError; retrying"
        ),
        format!("get leases {NS}/{LEASE}: the API server answered 500 InternalError; retrying"),
    ] {
        assert_eq!(
            stderr.matches(&expected).count(),
            1,
            "one line saying {expected:?}:\n{stderr}"
        );
    }
    assert_leveled(&stderr);
    // SIGTERM released the Lease.
    assert!(
        w.api.lease_spec()["holderIdentity"].is_null(),
        "{}",
        w.api.lease_spec()
    );
}

#[test]
fn entries_are_refreshed_after_their_refresh_point_and_dropped_when_expired() {
    let w = World::new("refresh", 6);
    let mut controller = Controller::start(w.command());
    let passwords = || -> Vec<String> {
        w.api
            .calls(Kind::Secret, "PUT")
            .iter()
            .filter_map(|r| {
                let data = body(r)["data"].as_object()?.clone();
                let (_, v) = data.iter().next()?;
                let e = parse_entry(&unb64(v.as_str()?));
                Some(e["password"].as_str()?.to_owned())
            })
            .collect()
    };
    controller.wait_until("three published tokens", |_| passwords().len() >= 3);
    let seen = passwords();
    assert_eq!(
        seen[..3],
        [
            "refresh-1-ecr-token-value",
            "refresh-2-ecr-token-value",
            "refresh-3-ecr-token-value"
        ]
    );
    // Each refresh came after the entry's refresh point: fetchedAt + 40 % of its life at least.
    let fetched: Vec<u64> = w
        .api
        .calls(Kind::Secret, "PUT")
        .iter()
        .take(3)
        .map(|r| {
            let data = body(r)["data"].as_object().unwrap().clone();
            let v = data.values().next().unwrap().as_str().unwrap().to_owned();
            parse_entry(&unb64(&v))["fetchedAt"].as_u64().unwrap()
        })
        .collect();
    assert!(fetched.windows(2).all(|w| w[1] >= w[0] + 2), "{fetched:?}");

    // The provider fails from now on: the last entry stays until it expires, then is withdrawn.
    w.ecr.set_failing(true);
    controller.wait_for_line("its entry expired and is withdrawn from the Secret");
    controller.wait_until("the Secret emptied", |_| w.api.secret_data().is_empty());
    let (status, stderr) = controller.terminate();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("keeping entry"), "{stderr}");
}

#[test]
fn losing_the_lease_stops_writes_at_once() {
    let w = World::new("lost", 6);
    let mut controller = Controller::start(w.command());
    controller.wait_until("a Secret write", |_| {
        !w.api.calls(Kind::Secret, "PUT").is_empty()
    });
    w.api.live_holder(Some("controller-b"));
    controller.wait_for_line("lost the Lease to controller-b: Secret writes stopped");
    // One more Lease read: anything sent before the loss has arrived by then.
    let gets = w.api.calls(Kind::Lease, "GET").len();
    controller.wait_until("another Lease read", |_| {
        w.api.calls(Kind::Lease, "GET").len() > gets
    });
    let (writes, fetches) = (w.api.calls(Kind::Secret, "PUT").len(), w.ecr.calls());
    // Past two refresh points of the six-second tokens (30 reads × 200 ms = 6 s).
    let gets = w.api.calls(Kind::Lease, "GET").len();
    controller.wait_until("30 more Lease reads", |_| {
        w.api.calls(Kind::Lease, "GET").len() >= gets + 30
    });
    assert_eq!(
        w.api.calls(Kind::Secret, "PUT").len(),
        writes,
        "no Secret write after the Lease was lost"
    );
    assert!(
        w.ecr.calls() <= fetches + 1,
        "at most the fetch already running finished"
    );
    let lease_writes = w.api.calls(Kind::Lease, "PUT").len();
    let (status, stderr) = controller.terminate();
    assert!(status.success(), "{stderr}");
    assert_eq!(
        w.api.calls(Kind::Lease, "PUT").len(),
        lease_writes,
        "a Lease it does not hold is not released"
    );
    assert_eq!(w.api.lease_spec()["holderIdentity"], "controller-b");
}

#[test]
fn no_token_reaches_stderr_even_at_the_highest_verbosity() {
    let w = World::new("verbose", 3600);
    let mut cmd = w.command();
    cmd.arg("--v=9");
    w.api.fault(Kind::Secret, "PUT", 1, 500);
    let (code, stderr) = once(cmd);
    assert_eq!(code, 0, "{stderr}");
    // Register what was published, then scan again (once() scanned before it was known).
    assert_eq!(w.api.secret_data().len(), 1);
    assert_clean(&stderr);
    assert!(
        stderr.contains("DEBUG") || stderr.contains("TRACE"),
        "verbose logging is on: {stderr}"
    );
}

#[test]
fn a_bad_config_is_one_line_and_exit_2() {
    let dir = TempDir::new("ctl-bad");
    let api = FakeApi::start();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "sharedIdentity: nodes\ntargets:\n  - name: gcr\n    provider: gcr\n    command: /x\n    image: gcr.io/p/i\n").unwrap();
    let (code, stderr) = once(command(&api, dir.path(), &config));
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("unknown variant `gcr`"), "{stderr}");
    assert!(api.requests().is_empty());
}

#[test]
fn sigterm_during_a_provider_run_stops_at_once_and_releases_the_lease() {
    let dir = TempDir::new("ctl-sigterm");
    let api = FakeApi::start();
    let pid_file = dir.path().join("provider.pid");
    let script = dir.path().join("slow-provider");
    let key = kcp_plugin::token_cache::CacheKey::new(kcp_plugin::token_cache::Issuer::Ecr)
        .scope("region", "us-west-2");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ \"$CREDENTIAL_PROVIDER_PRINT_CACHE_KEY\" = true ]; then\n  echo '{{\"kind\":\"TokenCacheKey\",\"file\":\"{}\",\"key\":\"{}\"}}'\n  exit 0\nfi\necho $$ > {}\nexec sleep 600\n",
            key.file_name(),
            key.canonical(),
            pid_file.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let target = TargetSpec {
        provider: "ecr",
        command: script,
        args: Vec::new(),
        env: Vec::new(),
        image: format!("{ECR_HOST}/app"),
    };
    let mut controller = Controller::start(command(&api, dir.path(), &target.config(dir.path())));
    controller.wait_until("the provider started", |_| {
        std::fs::read_to_string(&pid_file).is_ok_and(|p| p.ends_with('\n'))
    });
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let (status, stderr) = controller.terminate();
    // SAFETY: kill(2) with signal 0 only asks whether the process exists.
    let provider_alive = unsafe { libc::kill(pid, 0) } == 0;
    // SAFETY: ends the test's own stray process.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    assert!(status.success(), "{stderr}");
    assert!(
        provider_alive,
        "the controller waited for the provider run to end:\n{stderr}"
    );
    assert!(
        api.lease_spec()["holderIdentity"].is_null(),
        "{}",
        api.lease_spec()
    );
    assert!(api.calls(Kind::Secret, "PUT").is_empty());
}
