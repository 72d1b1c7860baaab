//! Image references: the kubelet's own images, hand-written cases, upstream vectors and rejections.

use super::*;

const SHA: &str = "sha256:86e0e091d0da6bde2456dbb48306f3956bbeb2eae1b5b9a43045843f69fe4aaa";

/// One accepted input and everything it must expose.
struct Accepted {
    input: &'static str,
    registry: &'static str,
    host: &'static str,
    port: Option<&'static str>,
    repository: &'static str,
    tag: Option<&'static str>,
    digest: Option<&'static str>,
}

const fn ok(
    input: &'static str,
    registry: &'static str,
    host: &'static str,
    port: Option<&'static str>,
    repository: &'static str,
    tag: Option<&'static str>,
    digest: Option<&'static str>,
) -> Accepted {
    Accepted {
        input,
        registry,
        host,
        port,
        repository,
        tag,
        digest,
    }
}

fn check_accepted(cases: &[Accepted]) {
    let mut failures = Vec::new();
    for c in cases {
        match ImageRef::parse(c.input) {
            Ok(r) => {
                let got = (
                    r.registry(),
                    r.host(),
                    r.port(),
                    r.repository(),
                    r.tag(),
                    r.digest(),
                );
                let want = (c.registry, c.host, c.port, c.repository, c.tag, c.digest);
                if got != want {
                    failures.push(format!("{:?}: got {got:?}, want {want:?}", c.input));
                }
            }
            Err(e) => failures.push(format!("{:?}: unexpected error: {e}", c.input)),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// What the kubelet sends: fully-qualified repositories, no tag or digest.
#[test]
fn parses_kubelet_images() {
    check_accepted(&[
        ok(
            "docker.io/library/nginx",
            "docker.io",
            "docker.io",
            None,
            "library/nginx",
            None,
            None,
        ),
        ok(
            "reg.io:5000/a/b",
            "reg.io:5000",
            "reg.io",
            Some("5000"),
            "a/b",
            None,
            None,
        ),
        ok(
            "123456789012.dkr.ecr.us-east-1.amazonaws.com/app",
            "123456789012.dkr.ecr.us-east-1.amazonaws.com",
            "123456789012.dkr.ecr.us-east-1.amazonaws.com",
            None,
            "app",
            None,
            None,
        ),
        ok(
            "test.registry.io/foobar",
            "test.registry.io",
            "test.registry.io",
            None,
            "foobar",
            None,
            None,
        ),
        ok(
            "test.registry.io/foo/bar",
            "test.registry.io",
            "test.registry.io",
            None,
            "foo/bar",
            None,
            None,
        ),
        ok(
            "test.registry.io:8080/foo",
            "test.registry.io:8080",
            "test.registry.io",
            Some("8080"),
            "foo",
            None,
            None,
        ),
        ok(
            "foo.bar.registry.io/foo/bar",
            "foo.bar.registry.io",
            "foo.bar.registry.io",
            None,
            "foo/bar",
            None,
            None,
        ),
        ok(
            "gcr.io/project/image",
            "gcr.io",
            "gcr.io",
            None,
            "project/image",
            None,
            None,
        ),
        ok(
            "us-docker.pkg.dev/p/r/i",
            "us-docker.pkg.dev",
            "us-docker.pkg.dev",
            None,
            "p/r/i",
            None,
            None,
        ),
        ok(
            "[fe80::1]:5000/app",
            "[fe80::1]:5000",
            "fe80::1",
            Some("5000"),
            "app",
            None,
            None,
        ),
        ok(
            "[fc00::1]/docker",
            "[fc00::1]",
            "fc00::1",
            None,
            "docker",
            None,
            None,
        ),
        ok(
            "localhost/x",
            "localhost",
            "localhost",
            None,
            "x",
            None,
            None,
        ),
        ok(
            "localhost:5000/x",
            "localhost:5000",
            "localhost",
            Some("5000"),
            "x",
            None,
            None,
        ),
        ok(
            "127.0.0.1:5000/docker/docker",
            "127.0.0.1:5000",
            "127.0.0.1",
            Some("5000"),
            "docker/docker",
            None,
            None,
        ),
        ok(
            "test-com:8080/foo",
            "test-com:8080",
            "test-com",
            Some("8080"),
            "foo",
            None,
            None,
        ),
        ok(
            "xn--n3h.com:18080/foo",
            "xn--n3h.com:18080",
            "xn--n3h.com",
            Some("18080"),
            "foo",
            None,
            None,
        ),
        ok(
            "quay.io/foo/bar",
            "quay.io",
            "quay.io",
            None,
            "foo/bar",
            None,
            None,
        ),
    ]);
}

/// What a person types: familiar names, tags, digests, bare registry hosts.
#[test]
fn parses_hand_written_images() {
    check_accepted(&[
        ok(
            "nginx",
            "docker.io",
            "docker.io",
            None,
            "library/nginx",
            None,
            None,
        ),
        ok(
            "nginx:1.27",
            "docker.io",
            "docker.io",
            None,
            "library/nginx",
            Some("1.27"),
            None,
        ),
        ok(
            "nginx:1.27.3-alpine",
            "docker.io",
            "docker.io",
            None,
            "library/nginx",
            Some("1.27.3-alpine"),
            None,
        ),
        ok(
            "library/nginx",
            "docker.io",
            "docker.io",
            None,
            "library/nginx",
            None,
            None,
        ),
        ok(
            "dmcgowan/myapp:latest",
            "docker.io",
            "docker.io",
            None,
            "dmcgowan/myapp",
            Some("latest"),
            None,
        ),
        ok(
            "docker.io/nginx",
            "docker.io",
            "docker.io",
            None,
            "library/nginx",
            None,
            None,
        ),
        ok(
            "index.docker.io/nginx",
            "docker.io",
            "docker.io",
            None,
            "library/nginx",
            None,
            None,
        ),
        ok(
            "index.docker.io/foo/bar",
            "docker.io",
            "docker.io",
            None,
            "foo/bar",
            None,
            None,
        ),
        ok(
            "docker.io/library/foo/bar",
            "docker.io",
            "docker.io",
            None,
            "library/foo/bar",
            None,
            None,
        ),
        ok(
            "ghcr.io/org/app:v1@sha256:86e0e091d0da6bde2456dbb48306f3956bbeb2eae1b5b9a43045843f69fe4aaa",
            "ghcr.io",
            "ghcr.io",
            None,
            "org/app",
            Some("v1"),
            Some(SHA),
        ),
        ok(
            "busybox@sha256:86e0e091d0da6bde2456dbb48306f3956bbeb2eae1b5b9a43045843f69fe4aaa",
            "docker.io",
            "docker.io",
            None,
            "library/busybox",
            None,
            Some(SHA),
        ),
        ok(
            "[fe80::1]:5000/app:tag",
            "[fe80::1]:5000",
            "fe80::1",
            Some("5000"),
            "app",
            Some("tag"),
            None,
        ),
        ok(
            "reg.io:5000/a/b:c",
            "reg.io:5000",
            "reg.io",
            Some("5000"),
            "a/b",
            Some("c"),
            None,
        ),
        ok(
            "localhost:5000/x:1",
            "localhost:5000",
            "localhost",
            Some("5000"),
            "x",
            Some("1"),
            None,
        ),
        // bare registry hosts (upstream plugin tests and kubelet vectors send these)
        ok(
            "test.registry.io",
            "test.registry.io",
            "test.registry.io",
            None,
            "",
            None,
            None,
        ),
        ok(
            "registry.io:5000",
            "registry.io:5000",
            "registry.io",
            Some("5000"),
            "",
            None,
            None,
        ),
        ok(
            "123456789123.dkr.ecr.us-west-2.amazonaws.com",
            "123456789123.dkr.ecr.us-west-2.amazonaws.com",
            "123456789123.dkr.ecr.us-west-2.amazonaws.com",
            None,
            "",
            None,
            None,
        ),
        ok(
            "192.168.0.1",
            "192.168.0.1",
            "192.168.0.1",
            None,
            "",
            None,
            None,
        ),
        ok(
            "192.168.0.1:80",
            "192.168.0.1:80",
            "192.168.0.1",
            Some("80"),
            "",
            None,
            None,
        ),
        ok("localhost", "localhost", "localhost", None, "", None, None),
        ok(
            "localhost:5000",
            "localhost:5000",
            "localhost",
            Some("5000"),
            "",
            None,
            None,
        ),
        ok(
            "[::1]:5000",
            "[::1]:5000",
            "::1",
            Some("5000"),
            "",
            None,
            None,
        ),
        ok("[fc00::1]", "[fc00::1]", "fc00::1", None, "", None, None),
        ok(
            "index.docker.io",
            "docker.io",
            "docker.io",
            None,
            "",
            None,
            None,
        ),
        ok("docker.io", "docker.io", "docker.io", None, "", None, None),
        ok(
            "reg.io:65535",
            "reg.io:65535",
            "reg.io",
            Some("65535"),
            "",
            None,
            None,
        ),
        ok("reg.io:0", "reg.io:0", "reg.io", Some("0"), "", None, None),
        ok(
            "xn--n3h.com",
            "xn--n3h.com",
            "xn--n3h.com",
            None,
            "",
            None,
            None,
        ),
        ok(
            "1.2.3.4:5000",
            "1.2.3.4:5000",
            "1.2.3.4",
            Some("5000"),
            "",
            None,
            None,
        ),
        // dotted names that are not registries stay Docker Hub images, as upstream
        ok(
            "ubuntu-12.04-base:latest",
            "docker.io",
            "docker.io",
            None,
            "library/ubuntu-12.04-base",
            Some("latest"),
            None,
        ),
        ok(
            "nginx.v2",
            "docker.io",
            "docker.io",
            None,
            "library/nginx.v2",
            None,
            None,
        ),
        ok(
            "app.v2:1.0",
            "docker.io",
            "docker.io",
            None,
            "library/app.v2",
            Some("1.0"),
            None,
        ),
        ok(
            "registry.io:abc",
            "docker.io",
            "docker.io",
            None,
            "library/registry.io",
            Some("abc"),
            None,
        ),
        ok(
            "1.2.3",
            "docker.io",
            "docker.io",
            None,
            "library/1.2.3",
            None,
            None,
        ),
        ok(
            "test.registry.io@sha256:86e0e091d0da6bde2456dbb48306f3956bbeb2eae1b5b9a43045843f69fe4aaa",
            "docker.io",
            "docker.io",
            None,
            "library/test.registry.io",
            None,
            Some(SHA),
        ),
        // upper case: a host when first of several components, else tolerated in paths
        ok("Foo/bar", "Foo", "Foo", None, "bar", None, None),
        ok(
            "docker.io/Library/Nginx",
            "docker.io",
            "docker.io",
            None,
            "Library/Nginx",
            None,
            None,
        ),
        ok(
            "NGINX",
            "docker.io",
            "docker.io",
            None,
            "library/NGINX",
            None,
            None,
        ),
        // separators, digits-only names, tags with '_'
        ok(
            "docker---rules/docker",
            "docker.io",
            "docker.io",
            None,
            "docker---rules/docker",
            None,
            None,
        ),
        ok(
            "dock__er/docker",
            "docker.io",
            "docker.io",
            None,
            "dock__er/docker",
            None,
            None,
        ),
        ok("d/t", "docker.io", "docker.io", None, "d/t", None, None),
        ok(
            "ubuntu-12.04-base",
            "docker.io",
            "docker.io",
            None,
            "library/ubuntu-12.04-base",
            None,
            None,
        ),
        ok(
            "a:_",
            "docker.io",
            "docker.io",
            None,
            "library/a",
            Some("_"),
            None,
        ),
        ok(
            "a@sha512:cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
            "docker.io",
            "docker.io",
            None,
            "library/a",
            None,
            Some(
                "sha512:cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
            ),
        ),
        ok(
            "a@multihash+base58:QmRZxt2b1FVZPNqd8hsiykDL3TdBDeTSPX9Kv46HmX4Gx8",
            "docker.io",
            "docker.io",
            None,
            "library/a",
            None,
            Some("multihash+base58:QmRZxt2b1FVZPNqd8hsiykDL3TdBDeTSPX9Kv46HmX4Gx8"),
        ),
        // 64 hex is only refused alone; with a registry it is a name
        ok(
            "docker.io/1a3f5e7d9c1b3a5f7e9d1c3b5a7f9e1d3c5b7a9f1e3d5d7c9b1a3f5e7d9c1b3a",
            "docker.io",
            "docker.io",
            None,
            "library/1a3f5e7d9c1b3a5f7e9d1c3b5a7f9e1d3c5b7a9f1e3d5d7c9b1a3f5e7d9c1b3a",
            None,
            None,
        ),
        ok(
            "dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9",
            "docker.io",
            "docker.io",
            None,
            "library/dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9",
            None,
            None,
        ),
    ]);
}

/// `normalized()` is what the kubelet would send; `Display` adds tag and digest.
#[test]
fn normalizes_and_displays() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "nginx",
            "docker.io/library/nginx",
            "docker.io/library/nginx",
        ),
        (
            "nginx:1.27",
            "docker.io/library/nginx",
            "docker.io/library/nginx:1.27",
        ),
        (
            "library/nginx",
            "docker.io/library/nginx",
            "docker.io/library/nginx",
        ),
        (
            "index.docker.io/foo/bar",
            "docker.io/foo/bar",
            "docker.io/foo/bar",
        ),
        (
            "docker.io/foo",
            "docker.io/library/foo",
            "docker.io/library/foo",
        ),
        ("reg.io:5000/a/b", "reg.io:5000/a/b", "reg.io:5000/a/b"),
        ("test.registry.io", "test.registry.io", "test.registry.io"),
        ("registry.io:5000", "registry.io:5000", "registry.io:5000"),
        (
            "[fe80::1]:5000/app:tag",
            "[fe80::1]:5000/app",
            "[fe80::1]:5000/app:tag",
        ),
        ("Foo/bar", "Foo/bar", "Foo/bar"),
        (
            "busybox:latest@sha256:86e0e091d0da6bde2456dbb48306f3956bbeb2eae1b5b9a43045843f69fe4aaa",
            "docker.io/library/busybox",
            "docker.io/library/busybox:latest@sha256:86e0e091d0da6bde2456dbb48306f3956bbeb2eae1b5b9a43045843f69fe4aaa",
        ),
    ];
    let mut failures = Vec::new();
    for &(input, normalized, display) in cases {
        let got = ImageRef::parse(input).map(|r| (r.normalized(), r.to_string()));
        let want = (normalized.to_owned(), display.to_owned());
        match got {
            Ok(got) if got == want => {}
            other => failures.push(format!("{input:?}: got {other:?}, want {want:?}")),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// distribution/reference `TestParseRepositoryInfo`: familiar, full and ambiguous
/// spellings all give the same full name, domain and path.
#[test]
fn upstream_repository_info() {
    let cases: &[(&[&str], &str, &str, &str)] = &[
        (
            &["fooo/bar", "docker.io/fooo/bar", "index.docker.io/fooo/bar"],
            "docker.io/fooo/bar",
            "docker.io",
            "fooo/bar",
        ),
        (
            &["ubuntu", "docker.io/library/ubuntu", "library/ubuntu"],
            "docker.io/library/ubuntu",
            "docker.io",
            "library/ubuntu",
        ),
        (
            &["nonlibrary/ubuntu", "docker.io/nonlibrary/ubuntu"],
            "docker.io/nonlibrary/ubuntu",
            "docker.io",
            "nonlibrary/ubuntu",
        ),
        (
            &["other/library", "docker.io/other/library"],
            "docker.io/other/library",
            "docker.io",
            "other/library",
        ),
        (
            &["127.0.0.1:8000/private/moonbase"],
            "127.0.0.1:8000/private/moonbase",
            "127.0.0.1:8000",
            "private/moonbase",
        ),
        (
            &["127.0.0.1:8000/privatebase"],
            "127.0.0.1:8000/privatebase",
            "127.0.0.1:8000",
            "privatebase",
        ),
        (
            &["example.com/private/moonbase"],
            "example.com/private/moonbase",
            "example.com",
            "private/moonbase",
        ),
        (
            &["example.com/privatebase"],
            "example.com/privatebase",
            "example.com",
            "privatebase",
        ),
        (
            &["example.com:8000/private/moonbase"],
            "example.com:8000/private/moonbase",
            "example.com:8000",
            "private/moonbase",
        ),
        (
            &["example.com:8000/privatebasee"],
            "example.com:8000/privatebasee",
            "example.com:8000",
            "privatebasee",
        ),
        (
            &[
                "ubuntu-12.04-base",
                "docker.io/library/ubuntu-12.04-base",
                "index.docker.io/library/ubuntu-12.04-base",
            ],
            "docker.io/library/ubuntu-12.04-base",
            "docker.io",
            "library/ubuntu-12.04-base",
        ),
        (
            &["foo", "docker.io/library/foo", "docker.io/foo"],
            "docker.io/library/foo",
            "docker.io",
            "library/foo",
        ),
        (
            &["library/foo/bar", "docker.io/library/foo/bar"],
            "docker.io/library/foo/bar",
            "docker.io",
            "library/foo/bar",
        ),
        (
            &["store/foo/bar", "docker.io/store/foo/bar"],
            "docker.io/store/foo/bar",
            "docker.io",
            "store/foo/bar",
        ),
        (&["Foo/bar"], "Foo/bar", "Foo", "bar"),
        (&["FOO/bar"], "FOO/bar", "FOO", "bar"),
        (&["test.com/foo"], "test.com/foo", "test.com", "foo"),
        (
            &["test_com/foo"],
            "docker.io/test_com/foo",
            "docker.io",
            "test_com/foo",
        ),
        (
            &["docker/migrator"],
            "docker.io/docker/migrator",
            "docker.io",
            "docker/migrator",
        ),
    ];
    let mut failures = Vec::new();
    for &(inputs, full, domain, path) in cases {
        for &input in inputs {
            let got = ImageRef::parse(input).map(|r| {
                (
                    r.normalized(),
                    r.registry().to_owned(),
                    r.repository().to_owned(),
                )
            });
            let want = (full.to_owned(), domain.to_owned(), path.to_owned());
            if got.as_ref() != Ok(&want) {
                failures.push(format!("{input:?}: got {got:?}, want {want:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn rejects_with_the_right_error() {
    use ImageError::*;
    let long = "a".repeat(MAX_IMAGE_LEN + 1);
    let long_tag = format!("nginx:{}", "t".repeat(129));
    let cases: Vec<(&str, ImageError)> = vec![
        ("", Empty),
        (
            &long,
            TooLong {
                len: MAX_IMAGE_LEN + 1,
                max: MAX_IMAGE_LEN,
            },
        ),
        ("https://github.com/docker/docker", HasScheme),
        ("http://reg.io/app", HasScheme),
        ("oci://reg.io/app", HasScheme),
        (
            "nginx 1.27",
            InvalidCharacter {
                ch: ' ',
                position: 5,
            },
        ),
        (
            "reg.io/a\tb",
            InvalidCharacter {
                ch: '\t',
                position: 8,
            },
        ),
        (
            "nginx\n",
            InvalidCharacter {
                ch: '\n',
                position: 5,
            },
        ),
        (
            "\u{0}",
            InvalidCharacter {
                ch: '\u{0}',
                position: 0,
            },
        ),
        (
            "é",
            InvalidCharacter {
                ch: 'é',
                position: 0,
            },
        ),
        (
            "abé/x",
            InvalidCharacter {
                ch: 'é',
                position: 2,
            },
        ),
        (
            "reg.io/app\u{7f}",
            InvalidCharacter {
                ch: '\u{7f}',
                position: 10,
            },
        ),
        (
            "reg.io/a%2fb",
            InvalidCharacter {
                ch: '%',
                position: 8,
            },
        ),
        (
            "reg.io/*",
            InvalidCharacter {
                ch: '*',
                position: 7,
            },
        ),
        (
            "[fe80::1%eth0]:5000/debian",
            InvalidCharacter {
                ch: '%',
                position: 8,
            },
        ),
        // registry
        ("fc00::1:5000/debian", InvalidPort(":1:5000".into())),
        (
            "[2001:db8:3:4::192.0.2.33]:5000/debian",
            InvalidHost("[2001:db8:3:4::192.0.2.33]:5000".into()),
        ),
        ("[", InvalidHost("[".into())),
        ("[::1", InvalidHost("[::1".into())),
        ("[]:5000/a", InvalidHost("[]:5000".into())),
        ("[::1]x/a", InvalidHost("[::1]x".into())),
        ("[::g]/a", InvalidHost("[::g]".into())),
        ("-docker.io/docker/docker", InvalidHost("-docker.io".into())),
        ("reg..io/a", InvalidHost("reg..io".into())),
        ("reg.io./a", InvalidHost("reg.io.".into())),
        ("re_g.io/a", InvalidHost("re_g.io".into())),
        (":5000/a", InvalidHost("".into())),
        ("reg.io:/a", InvalidPort("".into())),
        ("reg.io:65536/a", InvalidPort("65536".into())),
        (
            "reg.io:99999999999999999999/a",
            InvalidPort("99999999999999999999".into()),
        ),
        ("reg.io:+80/a", InvalidPort("+80".into())),
        ("reg.io:http/a", InvalidPort("http".into())),
        ("registry.io:99999", InvalidPort("99999".into())),
        ("1.2.3.4:70000", InvalidPort("70000".into())),
        ("localhost:", InvalidPort("".into())),
        // path
        ("/", InvalidPath("/".into())),
        ("@", InvalidPath("".into())),
        ("docker///docker", InvalidPath("docker///docker".into())),
        (
            "docker.io/docker///docker",
            InvalidPath("docker///docker".into()),
        ),
        ("a//b", InvalidPath("a//b".into())),
        ("docker/", InvalidPath("docker/".into())),
        ("reg.io/", InvalidPath("".into())),
        ("reg.io/a/", InvalidPath("a/".into())),
        ("/a", InvalidPath("/a".into())),
        ("-docker", InvalidPath("-docker".into())),
        ("-docker/docker", InvalidPath("-docker/docker".into())),
        ("docker-/docker", InvalidPath("docker-/docker".into())),
        ("____/____", InvalidPath("____/____".into())),
        ("_docker/_docker", InvalidPath("_docker/_docker".into())),
        // a dotted first component is a host, as in splitDockerDomain
        ("dock..er/docker", InvalidHost("dock..er".into())),
        ("dock_.er/docker", InvalidHost("dock_.er".into())),
        ("dock-.er/docker", InvalidHost("dock-.er".into())),
        ("docker/dock..er", InvalidPath("docker/dock..er".into())),
        ("docker/dock_.er", InvalidPath("docker/dock_.er".into())),
        ("docker/dock-.er", InvalidPath("docker/dock-.er".into())),
        ("dock___er/docker", InvalidPath("dock___er/docker".into())),
        ("reg.io/a+b", InvalidPath("a+b".into())),
        ("reg.io/a=b", InvalidPath("a=b".into())),
        ("reg.io/a/[b]", InvalidPath("a/[b]".into())),
        (
            "1a3f5e7d9c1b3a5f7e9d1c3b5a7f9e1d3c5b7a9f1e3d5d7c9b1a3f5e7d9c1b3a",
            InvalidPath("1a3f5e7d9c1b3a5f7e9d1c3b5a7f9e1d3c5b7a9f1e3d5d7c9b1a3f5e7d9c1b3a".into()),
        ),
        // tag
        (":", InvalidPath("".into())),
        ("nginx:", InvalidTag("".into())),
        ("a:b:c", InvalidTag("b:c".into())),
        ("nginx:-1", InvalidTag("-1".into())),
        ("nginx:.1", InvalidTag(".1".into())),
        ("nginx:a+b", InvalidTag("a+b".into())),
        ("nginx:a@", InvalidDigest("".into())),
        (&long_tag, InvalidTag("t".repeat(129))),
        ("reg.io:5000/a:b/c", InvalidPath("a:b/c".into())),
        // digest
        ("nginx@", InvalidDigest("".into())),
        ("nginx@sha256", InvalidDigest("sha256".into())),
        ("nginx@sha256:", InvalidDigest("sha256:".into())),
        ("nginx@sha256:abc", InvalidDigest("sha256:abc".into())),
        (
            "nginx@sha256:86E0E091D0DA6BDE2456DBB48306F3956BBEB2EAE1B5B9A43045843F69FE4AAA",
            InvalidDigest(
                "sha256:86E0E091D0DA6BDE2456DBB48306F3956BBEB2EAE1B5B9A43045843F69FE4AAA".into(),
            ),
        ),
        (
            "nginx@sha256:86e0e091d0da6bde2456dbb48306f3956bbeb2eae1b5b9a43045843f69fe4aaa0",
            InvalidDigest(
                "sha256:86e0e091d0da6bde2456dbb48306f3956bbeb2eae1b5b9a43045843f69fe4aaa0".into(),
            ),
        ),
        (
            "nginx@sha512:abcdef0123456789abcdef0123456789",
            InvalidDigest("sha512:abcdef0123456789abcdef0123456789".into()),
        ),
        (
            "nginx@SHA256:86e0e091d0da6bde2456dbb48306f3956bbeb2eae1b5b9a43045843f69fe4aaa",
            InvalidDigest(
                "SHA256:86e0e091d0da6bde2456dbb48306f3956bbeb2eae1b5b9a43045843f69fe4aaa".into(),
            ),
        ),
        (
            "nginx@foo:abcdef0123456789abcdef012345678",
            InvalidDigest("foo:abcdef0123456789abcdef012345678".into()),
        ),
        (
            "nginx@+foo:abcdef0123456789abcdef0123456789",
            InvalidDigest("+foo:abcdef0123456789abcdef0123456789".into()),
        ),
        (
            "nginx@foo:abcdef0123456789abcdef0123456789+",
            InvalidDigest("foo:abcdef0123456789abcdef0123456789+".into()),
        ),
        ("nginx@a@b", InvalidDigest("a@b".into())),
        ("test.registry.io@sha256", InvalidDigest("sha256".into())),
    ];
    let mut failures = Vec::new();
    for (input, want) in cases {
        match ImageRef::parse(input) {
            Err(got) if got == want => {}
            other => failures.push(format!(
                "{:?}: got {other:?}, want Err({want:?})",
                input.get(..80).unwrap_or(input)
            )),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn error_messages_are_one_clear_line() {
    use ImageError::*;
    let cases: &[(ImageError, &str)] = &[
        (Empty, "image is empty"),
        (
            TooLong {
                len: 5000,
                max: 4096,
            },
            "image is 5000 bytes long, more than the limit of 4096 bytes",
        ),
        (
            InvalidCharacter {
                ch: ' ',
                position: 7,
            },
            "image contains a space or control character at byte 7 (U+0020)",
        ),
        (
            InvalidCharacter {
                ch: '\u{0}',
                position: 0,
            },
            "image contains a space or control character at byte 0 (U+0000)",
        ),
        (
            InvalidCharacter {
                ch: 'é',
                position: 3,
            },
            "image contains the non-ASCII character 'é' at byte 3; image references are ASCII",
        ),
        (
            InvalidCharacter {
                ch: '%',
                position: 8,
            },
            "image contains '%' at byte 8, which no image reference allows",
        ),
        (
            HasScheme,
            "image must not start with a scheme such as https://; write registry/repository[:tag]",
        ),
        (
            InvalidPort("65536".into()),
            r#"invalid registry port "65536": expected a number from 0 to 65535"#,
        ),
        (
            InvalidTag("-1".into()),
            r#"invalid tag "-1": expected 1 to 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'"#,
        ),
    ];
    for (error, want) in cases {
        assert_eq!(error.to_string(), *want);
    }
    let all = [
        Empty,
        TooLong { len: 1, max: 0 },
        InvalidCharacter {
            ch: '\n',
            position: 0,
        },
        HasScheme,
        InvalidHost("a_b".into()),
        InvalidPort("x".into()),
        InvalidTag("".into()),
        InvalidDigest("x".into()),
        InvalidPath("a//b".into()),
    ];
    for error in all {
        let text = error.to_string();
        assert!(!text.contains('\n') && !text.is_empty(), "{text:?}");
    }
}

/// Parsing what `Display` or `normalized()` prints gives the same reference back, and no
/// input panics: every string of up to 4 characters over an alphabet of awkward
/// characters, plus the odd strings the brief lists.
#[test]
fn never_panics_and_display_round_trips() {
    let alphabet = [
        'a', 'B', '1', '.', ':', '/', '@', '[', ']', '-', '_', 'é', ' ', '\u{0}',
    ];
    let mut inputs: Vec<String> = vec![
        "".into(),
        "/".into(),
        ":".into(),
        "@".into(),
        "[".into(),
        "[::1".into(),
        "a:b:c".into(),
        "é".into(),
        "\u{0}".into(),
        "a".repeat(MAX_IMAGE_LEN),
        "a".repeat(MAX_IMAGE_LEN + 1),
        "é".repeat(MAX_IMAGE_LEN),
        "a/".repeat(MAX_IMAGE_LEN / 2),
        format!("reg.io/{}", "a/".repeat(1000)),
        format!("reg.io/{}b", "a/".repeat(1000)),
        format!("[{}]:1/a", ":".repeat(100)),
        "@".repeat(100),
        ":".repeat(100),
        "a@sha256:".repeat(50),
        "ab\u{10FFFF}".into(),
        "\u{FEFF}nginx".into(),
    ];
    let mut stack = vec![String::new()];
    while let Some(prefix) = stack.pop() {
        for c in alphabet {
            let mut s = prefix.clone();
            s.push(c);
            if s.chars().count() < 4 {
                stack.push(s.clone());
            }
            inputs.push(s);
        }
    }
    let mut failures = Vec::new();
    let mut accepted = 0usize;
    let short = |s: &str| s.chars().take(60).collect::<String>();
    for input in &inputs {
        let Ok(r) = ImageRef::parse(input) else {
            continue;
        };
        accepted += 1;
        // "docker.io/library/" can push a near-limit input over MAX_IMAGE_LEN.
        if r.to_string().len() > MAX_IMAGE_LEN {
            continue;
        }
        match ImageRef::parse(&r.to_string()) {
            Ok(back) if back == r => {}
            other => failures.push(format!(
                "{:?} -> {} -> {other:?}",
                short(input),
                short(&r.to_string())
            )),
        }
        match ImageRef::parse(&r.normalized()) {
            Ok(n)
                if n.registry() == r.registry()
                    && n.repository() == r.repository()
                    && n.tag().is_none()
                    && n.digest().is_none() => {}
            other => failures.push(format!(
                "{:?} -> normalized {} -> {other:?}",
                short(input),
                short(&r.normalized())
            )),
        }
    }
    assert!(accepted > 100, "only {accepted} inputs parsed");
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn max_length_is_inclusive() {
    let at_limit = format!("reg.io/{}", "a".repeat(MAX_IMAGE_LEN - "reg.io/".len()));
    assert_eq!(at_limit.len(), MAX_IMAGE_LEN);
    assert!(ImageRef::parse(&at_limit).is_ok());
    let over = format!("{at_limit}a");
    assert_eq!(
        ImageRef::parse(&over),
        Err(ImageError::TooLong {
            len: MAX_IMAGE_LEN + 1,
            max: MAX_IMAGE_LEN
        })
    );
}
