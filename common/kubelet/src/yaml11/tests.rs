//! go-yaml v2 and sigs.k8s.io/yaml vectors: the kubelet's measured table, scalars, keys, errors, anchors.

use super::json::go_format_g;
use super::*;
use serde_json::json;

/// `text` → the JSON `sigs.k8s.io/yaml` gives the kubelet, or its error.
fn json_of(text: &str) -> Result<serde_json::Value, String> {
    to_json(&parse(text)?.root)
}

/// issue #25 point 4: measured with kubelet 1.32's vendored `sigs.k8s.io/yaml`
/// (`YAMLToJSONStrict`).
#[test]
fn the_kubelets_measured_table() {
    let table: &[(&str, serde_json::Value)] = &[
        ("a: yes", json!({"a": true})),
        ("a: on", json!({"a": true})),
        ("a: y", json!({"a": true})),
        ("a: No", json!({"a": false})),
        ("a: 0755", json!({"a": 493})),
        ("a: 1_000", json!({"a": 1000})),
        ("a: 0x10", json!({"a": 16})),
        ("a: 1:30", json!({"a": "1:30"})),
        ("a: ~", json!({"a": null})),
        ("a: .5", json!({"a": 0.5})),
    ];
    for (yaml, want) in table {
        assert_eq!(&json_of(yaml).unwrap(), want, "{yaml}");
    }
}

/// go-yaml v2's own vectors (`decode_test.go`, `unmarshalTests`) decoding into an untyped map.
#[test]
fn go_yaml_v2_decode_vectors() {
    let table: &[(&str, Node)] = &[
        ("v: hi", Node::Str("hi".into())),
        ("v: true", Node::Bool(true)),
        ("v: 10", Node::Int(10)),
        ("v: 0b10", Node::Int(2)),
        ("v: 0xA", Node::Int(10)),
        ("v: 0.1", Node::Float(0.1)),
        ("v: .1", Node::Float(0.1)),
        ("v: .Inf", Node::Float(f64::INFINITY)),
        ("v: -.Inf", Node::Float(f64::NEG_INFINITY)),
        ("v: -10", Node::Int(-10)),
        ("v: -.1", Node::Float(-0.1)),
        ("v: 6.8523e+5", Node::Float(6.8523e+5)),
        ("v: 685.230_15e+03", Node::Float(685.23015e+03)),
        ("v: 685_230.15", Node::Float(685230.15)),
        ("v: -.inf", Node::Float(f64::NEG_INFINITY)),
        ("v: y", Node::Bool(true)),
        ("v: NO", Node::Bool(false)),
        ("v: True", Node::Bool(true)),
        ("v: on", Node::Bool(true)),
        ("v: 685230", Node::Int(685230)),
        ("v: +685_230", Node::Int(685230)),
        ("v: 02472256", Node::Int(685230)),
        ("v: 0x_0A_74_AE", Node::Int(685230)),
        ("v: 0b1010_0111_0100_1010_1110", Node::Int(685230)),
        ("v: -0b101010", Node::Int(-42)),
        (
            "v: -0b1000000000000000000000000000000000000000000000000000000000000000",
            Node::Int(i64::MIN),
        ),
        ("v:", Node::Null),
        ("v: ~", Node::Null),
        ("v: null", Node::Null),
        ("v: !!float '1.1'", Node::Float(1.1)),
        ("v: !!float 0", Node::Float(0.0)),
        ("v: !!float -1", Node::Float(-1.0)),
        ("v: !!null ''", Node::Null),
        (
            "%TAG !y! tag:yaml.org,2002:\n---\nv: !y!int '1'",
            Node::Int(1),
        ),
        ("v: ! test", Node::Str("test".into())),
        ("v: -b_c", Node::Str("-b_c".into())),
        ("v: +b_c", Node::Str("+b_c".into())),
        ("v: 50cent_of_dollar", Node::Str("50cent_of_dollar".into())),
        ("v: !!str 2015-01-01", Node::Str("2015-01-01".into())),
        ("v: \"2015-01-01\"", Node::Str("2015-01-01".into())),
        (
            "v: !!timestamp \"2015-01-01\"",
            Node::Str("2015-01-01".into()),
        ),
        ("v: 2015-01-01", Node::Str("2015-01-01".into())),
        // Sexagesimal numbers are purposely unsupported.
        ("v: 190:20:30", Node::Str("190:20:30".into())),
        ("v: 190:20:30.15", Node::Str("190:20:30.15".into())),
        ("v: !!binary aGVsbG8=", Node::Str("hello".into())),
    ];
    for (yaml, want) in table {
        let doc = parse(yaml).unwrap();
        assert_eq!(doc.root.get("v"), Some(want), "{yaml}");
    }
    let nan = parse("v: .NaN").unwrap();
    assert!(matches!(nan.root.get("v"), Some(Node::Float(f)) if f.is_nan()));
}

/// Every word go-yaml v2's table knows, and near misses that stay strings.
#[test]
fn booleans_and_nulls_are_yaml_1_1_words() {
    for word in [
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
    ] {
        assert_eq!(resolve_plain(word), Node::Bool(true), "{word}");
    }
    for word in [
        "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
    ] {
        assert_eq!(resolve_plain(word), Node::Bool(false), "{word}");
    }
    for word in ["", "~", "null", "Null", "NULL"] {
        assert_eq!(resolve_plain(word), Node::Null, "{word:?}");
    }
    for word in [
        "yEs", "oN", "t", "f", "nULL", "NaN", "Inf", "+inf", "none", "-", ".",
    ] {
        assert_eq!(resolve_plain(word), Node::Str(word.into()), "{word}");
    }
}

#[test]
fn numbers_follow_go_parse_int_and_the_float_pattern() {
    let table: &[(&str, Node)] = &[
        ("0", Node::Int(0)),
        ("-0", Node::Int(0)),
        ("007", Node::Int(7)),
        ("0o17", Node::Int(15)),
        ("0X1F", Node::Int(31)),
        ("+0x10", Node::Int(16)),
        ("1__0", Node::Int(10)),
        ("9223372036854775807", Node::Int(i64::MAX)),
        ("9223372036854775808", Node::Uint(9_223_372_036_854_775_808)),
        ("18446744073709551615", Node::Uint(u64::MAX)),
        (
            "18446744073709551616",
            Node::Float(18_446_744_073_709_551_616.0),
        ),
        (
            "-9223372036854775809",
            Node::Float(-9_223_372_036_854_775_809.0),
        ),
        // Not octal, but a float by the pattern.
        ("08", Node::Float(8.0)),
        ("09.5", Node::Float(9.5)),
        ("1e3", Node::Float(1000.0)),
        ("1.", Node::Float(1.0)),
        ("+.5", Node::Float(0.5)),
        (".5e1", Node::Float(5.0)),
        // Out of range for ParseFloat: a string.
        ("1e400", Node::Str("1e400".into())),
        (".5_0", Node::Str(".5_0".into())),
        ("0x", Node::Str("0x".into())),
        ("0b2", Node::Str("0b2".into())),
        ("1.2.3", Node::Str("1.2.3".into())),
        ("10.0.0.1", Node::Str("10.0.0.1".into())),
        ("1:30", Node::Str("1:30".into())),
        ("12h", Node::Str("12h".into())),
        (
            "2001-12-14t21:59:43.10Z",
            Node::Str("2001-12-14t21:59:43.10Z".into()),
        ),
    ];
    for (text, want) in table {
        assert_eq!(&resolve_plain(text), want, "{text}");
    }
}

#[test]
fn quoted_and_block_scalars_are_always_strings() {
    let doc =
        parse("a: 'yes'\nb: \"0755\"\nc: |\n  on\nd: >-\n  ~\ne: [\"1_000\", '.5']\n").unwrap();
    assert_eq!(
        to_json(&doc.root).unwrap(),
        json!({"a": "yes", "b": "0755", "c": "on\n", "d": "~", "e": ["1_000", ".5"]})
    );
}

#[test]
fn keys_become_strings_as_sigs_yaml_prints_them() {
    assert_eq!(
        json_of("yes: a\n1: b\n0x10: c\n1.5: d\n1e6: e\n0.0001: f\n").unwrap(),
        json!({"true": "a", "1": "b", "16": "c", "1.5": "d", "1e+06": "e", "0.0001": "f"})
    );
    assert_eq!(
        json_of("~: a").unwrap_err(),
        "unsupported map key of type: %!s(<nil>), key: <nil>"
    );
    assert_eq!(
        json_of("a: [1, .inf]").unwrap_err(),
        "json: unsupported value: +Inf"
    );
    assert_eq!(
        json_of("a: -.inf").unwrap_err(),
        "json: unsupported value: -Inf"
    );
    assert_eq!(
        json_of("a: .nan").unwrap_err(),
        "json: unsupported value: NaN"
    );
    // A key problem is found before a value problem.
    assert!(
        json_of("a: .nan\n~: b\n")
            .unwrap_err()
            .starts_with("unsupported map key")
    );
}

/// go-yaml v2's `unmarshalErrorTests` that are not about syntax.
#[test]
fn go_yaml_v2_error_vectors() {
    let table: &[(&str, &str)] = &[
        (
            "v: !!float 'error'",
            "yaml: cannot decode !!str `error` as a !!float",
        ),
        (
            "v: !!int 1.5",
            "yaml: cannot decode !!float `1.5` as a !!int",
        ),
        (
            "v: !!bool maybe",
            "yaml: cannot decode !!str `maybe` as a !!bool",
        ),
        (
            "v: !!timestamp 2015-02-30",
            "yaml: cannot decode !!str `2015-02-30` as a !!timestamp",
        ),
        ("a: &a\n  b: *a\n", "yaml: anchor value contains itself"),
        (
            "a: &x null\n<<:\n- *x\nb: &x {}\n",
            "yaml: map merge requires map or sequence of maps as the value",
        ),
        (
            "a: !!binary ==",
            "yaml: !!binary value contains invalid base64 data",
        ),
        ("{[.]}", "yaml: invalid map key: []interface {}{\".\"}"),
    ];
    for (yaml, want) in table {
        assert_eq!(parse(yaml).unwrap_err(), *want, "{yaml}");
    }
    let laughs = "a: &a [00,00,00,00,00,00,00,00,00]\n\
        b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n\
        c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n\
        d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n\
        e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n\
        f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n\
        g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n\
        h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n\
        i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
    assert_eq!(
        parse(laughs).unwrap_err(),
        "yaml: document contains excessive aliasing"
    );
    assert!(parse("v: [A,").unwrap_err().starts_with("yaml: "));
}

#[test]
fn anchors_merges_and_repeated_keys() {
    let doc = parse(
        "First occurrence: &anchor Foo\nSecond occurrence: *anchor\nOverride anchor: &anchor Bar\nReuse anchor: *anchor\n",
    )
    .unwrap();
    assert_eq!(
        to_json(&doc.root).unwrap(),
        json!({"First occurrence": "Foo", "Second occurrence": "Foo", "Override anchor": "Bar", "Reuse anchor": "Bar"})
    );
    // Earlier merged maps take precedence; an explicit key after the merge is a repeat.
    // (`y` would be the key `true`.)
    let doc =
        parse("a: &a {x: 1, v: 1}\nb: &b {x: 2, z: 2}\nc:\n  <<: [*a, *b]\n  w: 3\n").unwrap();
    assert_eq!(
        to_json(doc.root.get("c").unwrap()).unwrap(),
        json!({"x": 1, "v": 1, "z": 2, "w": 3})
    );
    // The earlier map was merged last, over the later one: strict decoding refuses that.
    assert_eq!(doc.duplicates, ["line 1: key \"x\" already set in map"]);
    // A repeated key: the last value wins, and strict decoding names the line of the value.
    let doc = parse("name: a\nother: 1\nname: b\n9: x\n9: y\n").unwrap();
    assert_eq!(doc.root.get("name"), Some(&Node::Str("b".into())));
    assert_eq!(
        doc.strict_error().unwrap(),
        "yaml: unmarshal errors:\n  line 3: key \"name\" already set in map\n  line 5: key 9 already set in map"
    );
    // A quoted `<<` is an ordinary key.
    let doc = parse("\"<<\": {a: 1}\n").unwrap();
    assert_eq!(to_json(&doc.root).unwrap(), json!({"<<": {"a": 1}}));
}

/// The walks over a document recurse: deep nesting must be an error, not a stack overflow.
/// (yaml-rust2 stops at a depth of a few hundred; go-yaml at 10,000.)
#[test]
fn deep_nesting_is_an_error() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(parse(&deep(100)).is_ok());
    let e = parse(&deep(10_001)).unwrap_err();
    assert!(e.starts_with("yaml: recursion limit exceeded"), "{e}");
}

#[test]
fn only_the_first_document_is_read() {
    let doc = parse("a: 1\n---\nb: [unclosed\n").unwrap();
    assert_eq!(to_json(&doc.root).unwrap(), json!({"a": 1}));
    assert_eq!(parse("").unwrap().root, Node::Null);
    assert_eq!(parse("# only a comment\n").unwrap().root, Node::Null);
}

#[test]
fn go_float_formatting() {
    assert_eq!(go_format_g(1000.0, true), "1000");
    assert_eq!(go_format_g(123456.0, true), "123456");
    assert_eq!(go_format_g(1234567.0, true), "1.234567e+06");
    assert_eq!(go_format_g(1e6, true), "1e+06");
    assert_eq!(go_format_g(123456789.0, true), "1.2345679e+08");
    assert_eq!(go_format_g(0.1, true), "0.1");
    assert_eq!(go_format_g(0.0001, true), "0.0001");
    assert_eq!(go_format_g(0.00001, true), "1e-05");
    assert_eq!(go_format_g(-2.5, false), "-2.5");
    assert_eq!(go_format_g(1e21, false), "1e+21");
}
