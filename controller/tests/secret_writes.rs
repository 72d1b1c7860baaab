//! How the controller writes the Secret and keeps it right: never more than the API server takes,
//! a refusal said plainly, every write under its own name, and a Secret that someone else
//! changed or deleted put right within seconds through a watch on it (or by polling when the
//! Role has no `watch`). Nothing here is timed: each test waits for an event (a log line, a
//! request the fakes recorded), and "within seconds" is counted in the controller's own Lease
//! renewals (every 200 ms here), far fewer than its 60 s resync would take.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;

use kcp_testkit::TempDir;
use support::*;

/// Lease renewals within which a change must be put right: 30 s at the tests' 200 ms retry
/// period, half the controller's 60 s resync.
const RENEWALS: usize = 150;

/// The lines of `stderr` containing `text`.
fn lines_with<'a>(stderr: &'a str, text: &str) -> Vec<&'a str> {
    stderr.lines().filter(|l| l.contains(text)).collect()
}

#[test]
fn a_secret_over_one_mebibyte_is_refused_before_any_put() {
    let dir = TempDir::new("ctl-large");
    let api = FakeApi::start();
    let script = script_provider(dir.path());
    // 18 entries of about 60 KB: each one a valid entry, together more than 1 MiB.
    let targets: Vec<(String, TargetSpec)> = (0..18)
        .map(|i| {
            (
                format!("big-{i}"),
                TargetSpec::script(&script, &format!("r{i}"), 60_000),
            )
        })
        .collect();
    let named: Vec<(&str, &TargetSpec)> = targets.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let config = config_of(dir.path(), &named);

    let (code, stderr) = once(command(&api, dir.path(), &config));
    assert_eq!(code, 1, "{stderr}");
    assert!(
        api.calls(Kind::Secret, "PUT").is_empty(),
        "no PUT: {stderr}"
    );
    // The size the API server would count: the entries the providers wrote.
    let size: u64 = targets
        .iter()
        .map(|(name, t)| {
            let file = &t.env.iter().find(|(k, _)| k == "FAKE_FILE").unwrap().1;
            std::fs::metadata(dir.path().join("work").join(name).join(file))
                .unwrap()
                .len()
        })
        .sum();
    assert!(size > 1024 * 1024);
    let lines = lines_with(&stderr, "1048576");
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(
        lines[0].contains(&format!(
            "the Secret {NS}/{SECRET} would hold {size} bytes of entries, over the API server's limit of 1048576 bytes (1 MiB)"
        )),
        "{stderr}"
    );
    assert!(lines[0].contains(" ERROR "), "{stderr}");
}

#[test]
fn a_422_is_one_clear_line() {
    let w = World::new("invalid", 3600);
    w.api.fault(Kind::Secret, "PUT", 1, 422);
    let mut c = Controller::start(w.command());
    c.wait_until("the Secret written", |_| !w.api.secret_data().is_empty());
    let (status, stderr) = c.terminate();
    assert!(status.success(), "{stderr}");
    let lines = lines_with(&stderr, "422");
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(
        lines[0].contains(&format!(
            "update secrets {NS}/{SECRET}: the API server refused it as invalid (422 Invalid): too large or malformed; check the size of the targets' entries"
        )),
        "{stderr}"
    );
    assert!(lines[0].contains(" ERROR "), "{stderr}");
    assert!(!lines[0].contains("retrying"), "{stderr}");
}

#[test]
fn every_write_names_the_field_manager_and_every_request_the_user_agent() {
    let w = World::new("manager", 3600);
    assert_eq!(once(w.command()).0, 0);
    let agent = format!(
        "credential-provider-token-controller/{}",
        env!("CARGO_PKG_VERSION")
    );
    let requests = w.api.requests();
    let puts: Vec<_> = requests.iter().filter(|r| r.method == "PUT").collect();
    assert!(
        puts.len() >= 3,
        "the Lease taken, the Secret, the Lease released"
    );
    for put in puts {
        assert_eq!(
            query(put).get("fieldManager").map(String::as_str),
            Some("credential-provider-token-controller"),
            "{}",
            put.target
        );
    }
    for request in &requests {
        assert_eq!(
            request.header("user-agent"),
            Some(agent.as_str()),
            "{}",
            request.target
        );
    }
}

/// Starts a controller on `w` and waits until it published and watches (or, with the watch
/// refused, until it published).
fn serving(w: &World, watched: bool) -> (Controller, BTreeMap<String, Vec<u8>>) {
    let mut c = Controller::start(w.command());
    c.wait_until("the Secret written", |_| !w.api.secret_data().is_empty());
    if watched {
        c.wait_until("a watch of the Secret", |_| w.api.open_watches() > 0);
    }
    let published = w.api.secret_data();
    (c, published)
}

/// Waits until the Secret holds `published` again, or [`RENEWALS`] Lease renewals passed; the
/// renewals it took.
fn put_right(c: &mut Controller, w: &World, published: &BTreeMap<String, Vec<u8>>) -> usize {
    let start = w.api.calls(Kind::Lease, "PUT").len();
    let renewals = || w.api.calls(Kind::Lease, "PUT").len() - start;
    c.wait_until("the Secret put right", |_| {
        w.api.secret_data() == *published || renewals() > RENEWALS
    });
    renewals()
}

#[test]
fn a_secret_overwritten_by_someone_else_is_put_right_at_once() {
    let w = World::new("overwrite", 3600);
    let (mut c, published) = serving(&w, true);
    w.api.set_secret_data(&BTreeMap::from([(
        "someone-else".to_owned(),
        b"not an entry".to_vec(),
    )]));
    let took = put_right(&mut c, &w, &published);
    let (status, stderr) = c.terminate();
    assert!(status.success(), "{stderr}");
    assert_eq!(w.api.secret_data(), published, "{stderr}");
    assert!(
        took <= RENEWALS,
        "put right after {took} renewals:\n{stderr}"
    );
    let watches = w.api.watches();
    assert!(!watches.is_empty());
    for watch in &watches {
        assert_eq!(
            query(watch).get("fieldSelector"),
            Some(&format!("metadata.name={SECRET}")),
            "{}",
            watch.target
        );
    }
    assert_eq!(
        lines_with(&stderr, "match no configured target: someone-else").len(),
        1,
        "{stderr}"
    );
}

#[test]
fn a_deleted_secret_is_reported_once_and_filled_when_it_is_back() {
    let w = World::new("deleted", 3600);
    let (mut c, published) = serving(&w, true);
    w.api.delete_secret();
    c.wait_for_line("re-apply the manifests in deploy/");
    // Several retries later (its back-off starts at the retry period), still one line.
    let puts = w.api.calls(Kind::Lease, "PUT").len();
    c.wait_until("twenty more Lease renewals", |_| {
        w.api.calls(Kind::Lease, "PUT").len() >= puts + 20
    });
    w.api.recreate_secret();
    let took = put_right(&mut c, &w, &published);
    let (status, stderr) = c.terminate();
    assert!(status.success(), "{stderr}");
    assert_eq!(w.api.secret_data(), published, "{stderr}");
    assert!(took <= RENEWALS, "filled after {took} renewals:\n{stderr}");
    let lines = lines_with(&stderr, "not found (404)");
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(
        lines[0].contains(&format!("get secrets {NS}/{SECRET}: not found (404)")),
        "{stderr}"
    );
    assert!(lines[0].contains(" ERROR "), "{stderr}");
}

#[test]
fn without_watch_permission_it_polls_and_says_so_once() {
    let w = World::new("poll", 3600);
    w.api.refuse_watch();
    let (mut c, published) = serving(&w, false);
    c.wait_for_line("reading the Secret every 10s instead");
    w.api.set_secret_data(&BTreeMap::new());
    let took = put_right(&mut c, &w, &published);
    let (status, stderr) = c.terminate();
    assert!(status.success(), "{stderr}");
    assert_eq!(w.api.secret_data(), published, "{stderr}");
    assert!(
        took <= RENEWALS,
        "put right after {took} renewals:\n{stderr}"
    );
    let lines = lines_with(&stderr, "watch secrets");
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(
        lines[0].contains(&format!(
            "watch secrets {NS}/{SECRET}: forbidden (403): the controller's Role needs the rule verbs [watch] on secrets with resourceNames [{SECRET}]"
        )),
        "{stderr}"
    );
    assert!(lines[0].contains(" WARN "), "{stderr}");
}
