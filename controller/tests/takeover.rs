//! A new leader keeps what is valid: on gaining the Lease the controller reads the Secret and
//! takes over every valid entry that is as new as its own or newer, so a new pod (empty work
//! directory) fetches nothing that is fresh, a leadership change never publishes an older entry
//! over a newer one, and a failed fetch never withdraws a still-valid entry. Nothing here is
//! timed: each test waits for an event (a log line, a request the fakes recorded).
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use kcp_testkit::unix_now;
use support::*;

fn work(w: &World) -> std::path::PathBuf {
    w.dir.path().join("work")
}

fn password(w: &World) -> String {
    let data = w.api.secret_data();
    assert_eq!(data.len(), 1, "{:?}", data.keys());
    let entry = parse_entry(data.values().next().unwrap());
    entry["password"].as_str().unwrap().to_owned()
}

/// Waits until the controller took the Secret's entry over (or did what it must not: fetch, or
/// write the Secret), then for five more Lease renewals, so a fetch or write that would follow
/// the takeover has had its turn.
fn wait_for_takeover(c: &mut Controller, w: &World, puts: usize) {
    c.wait_until("the Secret's entry taken over, a fetch or a write", |c| {
        c.stderr().contains("took entry")
            || w.api.calls(Kind::Secret, "PUT").len() > puts
            || w.ecr.calls() > 1
    });
    let gets = w.api.calls(Kind::Lease, "GET").len();
    c.wait_until("five more Lease reads", |_| {
        w.api.calls(Kind::Lease, "GET").len() >= gets + 5
    });
}

#[test]
fn a_new_leader_with_nothing_saved_takes_the_secrets_entry_and_fetches_nothing() {
    let w = World::new("adopt", 3600);
    assert_eq!(once(w.command()).0, 0);
    assert_eq!(w.ecr.calls(), 1);
    let published = w.api.secret_data();
    let name = published.keys().next().unwrap().clone();
    // A new pod: its emptyDir is empty.
    std::fs::remove_dir_all(work(&w)).unwrap();
    let puts = w.api.calls(Kind::Secret, "PUT").len();

    let mut c = Controller::start(w.command());
    wait_for_takeover(&mut c, &w, puts);
    let (status, stderr) = c.terminate();
    assert!(status.success(), "{stderr}");
    assert_eq!(
        w.ecr.calls(),
        1,
        "no upstream call for a fresh entry:\n{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "target ecr-prod: took entry {name} from the Secret"
        )),
        "{stderr}"
    );
    assert_eq!(w.api.secret_data(), published);
    assert_eq!(
        w.api.calls(Kind::Secret, "PUT").len(),
        puts,
        "nothing to write"
    );
}

#[test]
fn a_leadership_change_never_publishes_an_older_entry_over_a_newer_one() {
    let w = World::new("older", 3600);
    assert_eq!(once(w.command()).0, 0);
    let older = password(&w);
    let fetched = parse_entry(w.api.secret_data().values().next().unwrap())["fetchedAt"]
        .as_u64()
        .unwrap();
    // This replica keeps its older entry aside; another replica (an empty work directory)
    // publishes a newer one, fetched at least a second later.
    let kept = w.dir.path().join("work-kept");
    std::fs::rename(work(&w), &kept).unwrap();
    while unix_now() <= fetched {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(once(w.command()).0, 0);
    let newer = w.api.secret_data();
    assert_ne!(password(&w), older);
    std::fs::remove_dir_all(work(&w)).unwrap();
    std::fs::rename(&kept, work(&w)).unwrap();
    let puts = w.api.calls(Kind::Secret, "PUT").len();

    // This replica leads again, with its older entry saved.
    let mut c = Controller::start(w.command());
    wait_for_takeover(&mut c, &w, puts);
    let (status, stderr) = c.terminate();
    assert!(status.success(), "{stderr}");
    assert_eq!(
        w.api.secret_data(),
        newer,
        "the newer entry stays:\n{stderr}"
    );
    assert_eq!(w.api.calls(Kind::Secret, "PUT").len(), puts, "{stderr}");
    assert!(
        stderr.contains("kept entry"),
        "it had the older one saved: {stderr}"
    );
    assert!(stderr.contains("took entry"), "{stderr}");
    assert_eq!(w.ecr.calls(), 2, "{stderr}");
}

#[test]
fn once_whose_fetch_fails_keeps_the_secrets_valid_entry() {
    let w = World::new("keepsecret", 3600);
    assert_eq!(once(w.command()).0, 0);
    let published = w.api.secret_data();
    let name = published.keys().next().unwrap().clone();
    // A Job's fresh pod: nothing saved; its fetch fails.
    std::fs::remove_dir_all(work(&w)).unwrap();
    w.ecr.set_failing(true);
    let puts = w.api.calls(Kind::Secret, "PUT").len();

    let (code, stderr) = once(w.command());
    assert_eq!(code, 1, "a fetch failed: {stderr}");
    assert_eq!(w.api.secret_data(), published, "{stderr}");
    assert_eq!(w.api.calls(Kind::Secret, "PUT").len(), puts, "{stderr}");
    assert!(
        stderr.contains(&format!("took entry {name} from the Secret")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("keeping entry {name}")),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 target(s) could not be fetched"),
        "{stderr}"
    );
}

#[test]
fn the_lease_race_at_start_is_an_info_line() {
    let w = World::new("race", 3600);
    // The other replica took the Lease between our read and our update.
    w.api.fault(Kind::Lease, "PUT", 1, 409);
    let (code, stderr) = once(w.command());
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(&format!("update leases {NS}/{LEASE}: conflict (409)")))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains(" INFO "), "{stderr}");
}
