//! One table of bad input that every provider binary must refuse the same clean way.
//!
//! Each case is a reason to fail for any plugin, whatever registry it serves: malformed or
//! truncated JSON, the wrong shape, kind or apiVersion, a missing or unusable image, fields of the
//! wrong type, oversized or non-UTF-8 stdin, and bad values of the flags and variables every
//! binary shares (`--deadline`, `--v`, `CREDENTIAL_PROVIDER_DEADLINE`,
//! `CREDENTIAL_PROVIDER_VERBOSITY`). A refusal means: a non-zero exit with the documented code
//! (2: bad request or usage), nothing on stdout, exactly one short stderr line saying what was
//! wrong, no panic and no signal. Provider-specific inputs (a broken `azure.json`, key file or AWS
//! config) stay in each provider's tests.
//!
//! ```ignore
//! // In a provider's tests, with a plugin that answers `image` when the input is good:
//! kcp_testkit::bad_input::assert_rejects_all(&plugin, "myreg.azurecr.io/app");
//! ```

use kcp_kubelet::ApiVersion;
use kcp_kubelet::protocol::MAX_REQUEST_BYTES;

use super::Plugin;

/// The longest stderr line a refusal may print, whatever the input (the kubelet copies it into
/// its log; an echoed megabyte of input would flood it).
pub const MAX_LINE_BYTES: usize = 4096;

/// One bad input and how it must be refused.
#[derive(Debug, Clone)]
pub struct BadInput {
    /// What is wrong, for failure messages.
    pub name: String,
    /// Bytes on stdin.
    pub stdin: Vec<u8>,
    /// Extra command-line arguments, after the plugin's own.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// The exit code.
    pub exit_code: i32,
    /// Text the stderr line must contain.
    pub says: String,
}

const V1: &str = "credentialprovider.kubelet.k8s.io/v1";

/// A request with the given fields after `kind` and `apiVersion` (both valid).
fn request(fields: &str) -> Vec<u8> {
    format!(r#"{{"kind":"CredentialProviderRequest","apiVersion":"{V1}",{fields}}}"#).into_bytes()
}

/// The table, built around `image`: a valid image the provider would answer, so each case is
/// wrong only in the way its name says.
pub fn cases(image: &str) -> Vec<BadInput> {
    let good = request(&format!(r#""image":"{image}""#));
    let good_text = String::from_utf8_lossy(&good).into_owned();
    // The runtime's usage exit status (`kcp_plugin::runner::EXIT_USAGE`), written out so that a
    // change of the number fails here.
    let usage = 2;
    let mut cases: Vec<BadInput> = Vec::new();
    let mut stdin = |name: &str, bytes: Vec<u8>, says: &str| {
        cases.push(BadInput {
            name: name.to_owned(),
            stdin: bytes,
            args: Vec::new(),
            env: Vec::new(),
            exit_code: usage,
            says: says.to_owned(),
        });
    };
    let not_json = "request is not valid JSON";

    // Nothing, or nothing useful.
    stdin("empty stdin", Vec::new(), "no request on stdin");
    stdin(
        "whitespace only",
        b" \n\t\r\n ".to_vec(),
        "no request on stdin",
    );
    // Malformed and truncated JSON.
    stdin("not JSON", b"hello".to_vec(), not_json);
    stdin(
        "YAML instead of JSON",
        format!("kind: CredentialProviderRequest\napiVersion: {V1}\nimage: {image}\n").into_bytes(),
        not_json,
    );
    stdin("truncated after the first brace", b"{".to_vec(), not_json);
    stdin(
        "truncated inside the image",
        good[..good.len() - 3].to_vec(),
        not_json,
    );
    stdin(
        "truncated before the closing brace",
        good[..good.len() - 1].to_vec(),
        not_json,
    );
    stdin(
        "unterminated string",
        request(&format!(r#""image":"{image}"#)),
        not_json,
    );
    stdin(
        "trailing comma",
        request(&format!(r#""image":"{image}","#)),
        not_json,
    );
    stdin(
        "single quotes",
        good_text.replace('"', "'").into_bytes(),
        not_json,
    );
    stdin(
        "unquoted keys",
        format!(r#"{{kind:"CredentialProviderRequest",apiVersion:"{V1}",image:"{image}"}}"#)
            .into_bytes(),
        not_json,
    );
    stdin(
        "a comment",
        format!("/* kubelet */ {good_text}").into_bytes(),
        not_json,
    );
    stdin(
        "NaN value",
        request(&format!(r#""image":"{image}","x":NaN"#)),
        not_json,
    );
    stdin(
        "lone surrogate escape",
        request(r#""image":"\ud800""#),
        not_json,
    );
    stdin("bad escape", request(r#""image":"\q""#), not_json);
    stdin(
        "byte order mark",
        [b"\xEF\xBB\xBF".as_slice(), &good].concat(),
        not_json,
    );
    stdin(
        "nested too deep",
        request(&format!(
            r#""image":"{image}","x":{}{}"#,
            "[".repeat(10_000),
            "]".repeat(10_000)
        )),
        not_json,
    );
    // More than one document, or something after it.
    stdin(
        "two JSON documents",
        [good.as_slice(), &good].concat(),
        "trailing characters",
    );
    stdin(
        "two documents on two lines",
        [good.as_slice(), b"\n", &good, b"\n"].concat(),
        "trailing characters",
    );
    stdin(
        "trailing garbage",
        [good.as_slice(), b" x"].concat(),
        "trailing characters",
    );
    // Valid JSON, not an object.
    stdin(
        "JSON array",
        b"[]".to_vec(),
        "must be a JSON object, got an array",
    );
    stdin(
        "request inside an array",
        [b"[".as_slice(), &good, b"]"].concat(),
        "must be a JSON object, got an array",
    );
    stdin(
        "JSON number",
        b"42".to_vec(),
        "must be a JSON object, got a number",
    );
    stdin(
        "JSON null",
        b"null".to_vec(),
        "must be a JSON object, got null",
    );
    stdin(
        "JSON string",
        b"\"CredentialProviderRequest\"".to_vec(),
        "must be a JSON object, got a string",
    );
    stdin(
        "JSON boolean",
        b"true".to_vec(),
        "must be a JSON object, got a boolean",
    );
    stdin("empty object", b"{}".to_vec(), "request has no \"kind\"");
    // kind.
    stdin(
        "missing kind",
        format!(r#"{{"apiVersion":"{V1}","image":"{image}"}}"#).into_bytes(),
        "request has no \"kind\"",
    );
    stdin(
        "kind is the response's",
        good_text
            .replace("CredentialProviderRequest", "CredentialProviderResponse")
            .into_bytes(),
        "request kind is \"CredentialProviderResponse\"",
    );
    stdin(
        "kind in lower case",
        good_text
            .replace("CredentialProviderRequest", "credentialproviderrequest")
            .into_bytes(),
        "request kind is \"credentialproviderrequest\"",
    );
    stdin(
        "kind as a number",
        format!(r#"{{"kind":1,"apiVersion":"{V1}","image":"{image}"}}"#).into_bytes(),
        "request field \"kind\" must be a string",
    );
    // apiVersion.
    stdin(
        "missing apiVersion",
        format!(r#"{{"kind":"CredentialProviderRequest","image":"{image}"}}"#).into_bytes(),
        "request has no \"apiVersion\"",
    );
    stdin(
        "empty apiVersion",
        good_text.replace(V1, "").into_bytes(),
        "request has no \"apiVersion\"",
    );
    stdin(
        "unknown version",
        good_text
            .replace(V1, "credentialprovider.kubelet.k8s.io/v2")
            .into_bytes(),
        "is not supported",
    );
    stdin(
        "version in upper case",
        good_text
            .replace(V1, "credentialprovider.kubelet.k8s.io/V1")
            .into_bytes(),
        "is not supported",
    );
    stdin(
        "another group",
        good_text
            .replace(V1, "client.authentication.k8s.io/v1")
            .into_bytes(),
        "is not in group",
    );
    stdin(
        "group without version",
        good_text
            .replace(V1, "credentialprovider.kubelet.k8s.io")
            .into_bytes(),
        "is not in group",
    );
    stdin(
        "version without group",
        good_text.replace(V1, "v1").into_bytes(),
        "is not in group",
    );
    stdin(
        "apiVersion as a number",
        good_text.replace(&format!("\"{V1}\""), "1").into_bytes(),
        "request field \"apiVersion\" must be a string",
    );
    // image.
    stdin(
        "missing image",
        format!(r#"{{"kind":"CredentialProviderRequest","apiVersion":"{V1}"}}"#).into_bytes(),
        "image in plugin request was empty",
    );
    stdin(
        "empty image",
        request(r#""image":"""#),
        "image in plugin request was empty",
    );
    stdin(
        "null image",
        request(r#""image":null"#),
        "image in plugin request was empty",
    );
    stdin(
        "whitespace image",
        request(r#""image":"   ""#),
        "invalid image",
    );
    stdin(
        "image as a number",
        request(r#""image":42"#),
        "request field \"image\" must be a string",
    );
    stdin(
        "image as a list",
        request(&format!(r#""image":["{image}"]"#)),
        "request field \"image\" must be a string",
    );
    stdin(
        "image with a space",
        request(&format!(r#""image":"{image} extra""#)),
        "invalid image",
    );
    stdin(
        "image with a tab",
        request(&format!(r#""image":"{image}\t""#)),
        "invalid image",
    );
    stdin(
        "image with a newline",
        request(&format!(r#""image":"{image}\nx""#)),
        "invalid image",
    );
    stdin(
        "image with a bell character",
        request(&format!(r#""image":"{image}\u0007""#)),
        "invalid image",
    );
    stdin(
        "image with NUL",
        request(&format!(r#""image":"{image}\u0000""#)),
        "invalid image",
    );
    stdin(
        "image with non-ASCII",
        request(&format!(r#""image":"{image}é""#)),
        "invalid image",
    );
    stdin(
        "image with a scheme",
        request(&format!(r#""image":"https://{image}""#)),
        "invalid image",
    );
    stdin(
        "image over the length limit",
        request(&format!(r#""image":"{image}/{}""#, "a".repeat(5000))),
        "invalid image",
    );
    stdin(
        "image of almost a mebibyte",
        request(&format!(
            r#""image":"{image}/{}""#,
            "a".repeat(MAX_REQUEST_BYTES - 200)
        )),
        "invalid image",
    );
    let bad_utf8 = [
        format!(r#"{{"kind":"CredentialProviderRequest","apiVersion":"{V1}","image":"{image}/"#)
            .as_bytes(),
        b"\xff\xfe\"}",
    ]
    .concat();
    stdin("invalid UTF-8 in the image", bad_utf8, "not valid UTF-8");
    stdin(
        "invalid UTF-8 in a key",
        b"{\"kind\xc3\x28\":1}".to_vec(),
        "not valid UTF-8",
    );
    // Token-mode fields of the wrong type (v1 reads them).
    stdin(
        "serviceAccountAnnotations as a list",
        request(&format!(
            r#""image":"{image}","serviceAccountAnnotations":["a"]"#
        )),
        "request field \"serviceAccountAnnotations\" must be an object of string values",
    );
    stdin(
        "serviceAccountAnnotations with a number",
        request(&format!(
            r#""image":"{image}","serviceAccountAnnotations":{{"a":1}}"#
        )),
        "request field \"serviceAccountAnnotations\" must be an object of string values",
    );
    stdin(
        "serviceAccountToken as a number",
        request(&format!(r#""image":"{image}","serviceAccountToken":7"#)),
        "request field \"serviceAccountToken\" must be a string",
    );
    // Duplicate keys: the last one wins, as in Go's decoder, so a bad last value is refused.
    stdin(
        "duplicate image key, the last one empty",
        request(&format!(r#""image":"{image}","image":"""#)),
        "image in plugin request was empty",
    );
    // Oversized stdin.
    let mut huge = request(&format!(r#""image":"{image}","pad":""#));
    huge.extend(std::iter::repeat_n(b'x', 2 * MAX_REQUEST_BYTES));
    huge.extend_from_slice(b"\"}");
    stdin(
        "stdin over the cap",
        huge,
        &format!("larger than {MAX_REQUEST_BYTES} bytes"),
    );
    let mut padded = vec![b' '; MAX_REQUEST_BYTES];
    padded.extend_from_slice(&good);
    stdin(
        "valid request after a mebibyte of spaces",
        padded,
        &format!("larger than {MAX_REQUEST_BYTES} bytes"),
    );

    // Shared flags and variables with bad values, in front of a good request.
    let mut usage_case = |name: &str, args: &[&str], env: &[(&str, &str)], says: &str| {
        cases.push(BadInput {
            name: name.to_owned(),
            stdin: good.clone(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            exit_code: usage,
            says: says.to_owned(),
        });
    };
    usage_case(
        "--deadline=banana",
        &["--deadline=banana"],
        &[],
        "invalid value 'banana' for '--deadline",
    );
    usage_case(
        "--deadline with days",
        &["--deadline=1d"],
        &[],
        "'--deadline",
    );
    usage_case(
        "--deadline without a value",
        &["--deadline"],
        &[],
        "'--deadline",
    );
    usage_case("--deadline=", &["--deadline="], &[], "'--deadline");
    usage_case(
        "--deadline=0s",
        &["--deadline=0s"],
        &[],
        "deadline must be positive",
    );
    usage_case(
        "--deadline=-5s",
        &["--deadline=-5s"],
        &[],
        "deadline must be positive",
    );
    usage_case("--v=x", &["--v=x"], &[], "invalid value 'x' for '--v");
    usage_case(
        "-v=x (klog spelling)",
        &["-v=x"],
        &[],
        "invalid value 'x' for '--v",
    );
    usage_case("--v=-1", &["--v=-1"], &[], "'--v");
    usage_case("--v beyond u32", &["--v=99999999999"], &[], "'--v");
    usage_case(
        "CREDENTIAL_PROVIDER_DEADLINE=banana",
        &[],
        &[("CREDENTIAL_PROVIDER_DEADLINE", "banana")],
        "CREDENTIAL_PROVIDER_DEADLINE",
    );
    usage_case(
        "CREDENTIAL_PROVIDER_DEADLINE=0s",
        &[],
        &[("CREDENTIAL_PROVIDER_DEADLINE", "0s")],
        "deadline must be positive",
    );
    usage_case(
        "CREDENTIAL_PROVIDER_VERBOSITY=loud",
        &[],
        &[("CREDENTIAL_PROVIDER_VERBOSITY", "loud")],
        "CREDENTIAL_PROVIDER_VERBOSITY: invalid verbosity \"loud\"",
    );
    cases
}

/// Runs every case of [`cases`] against `plugin` and asserts each is refused cleanly (see the
/// module docs). First checks that `plugin` does answer a good request for `image` (at default
/// verbosity, with nothing on stderr), so that every refusal is due to the case alone. `plugin`
/// must not set `--deadline` or `--v` itself.
pub fn assert_rejects_all(plugin: &Plugin, image: &str) {
    let control = plugin.request(ApiVersion::V1, image);
    control.accepted();
    assert_eq!(
        control.stderr(),
        "",
        "the control request must succeed quietly"
    );
    let all = cases(image);
    assert!(all.len() >= 40, "the table has {} cases", all.len());
    for case in all {
        let mut p = plugin.clone().args(case.args.iter().cloned());
        for (k, v) in &case.env {
            p = p.env(k.clone(), v.clone());
        }
        let out = p.raw(&case.stdin);
        let name = &case.name;
        let stderr = out.stderr();
        assert!(
            !stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"),
            "{name}: the plugin panicked:\n{stderr}"
        );
        assert_eq!(
            out.exec.exit_code,
            Some(case.exit_code),
            "{name}: exit code (None = killed by a signal or timed out)\n{stderr}"
        );
        let line = std::panic::catch_unwind(|| out.rejected())
            .unwrap_or_else(|_| panic!("{name}: not a clean refusal (see above)"));
        assert!(
            line.contains(&case.says),
            "{name}: stderr line {line:?} lacks {:?}",
            case.says
        );
        assert!(
            line.contains("ERROR"),
            "{name}: the line is an error log line: {line:?}"
        );
        assert!(
            line.len() <= MAX_LINE_BYTES,
            "{name}: a {} byte stderr line (limit {MAX_LINE_BYTES}) starting {:?}",
            line.len(),
            line.chars().take(200).collect::<String>()
        );
    }
}
