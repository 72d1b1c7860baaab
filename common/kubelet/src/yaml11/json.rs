//! `sigs.k8s.io/yaml`'s conversion of a decoded value to JSON: mapping keys printed as Go prints
//! them (floats with 32-bit precision), a null or unsigned key and a NaN or infinite number as
//! its errors, and Go's `%#v` for the messages that quote a key.

use super::Node;

/// A value as Go's `%#v` prints it, for the messages that quote a key.
pub(super) fn go_value(node: &Node) -> String {
    match node {
        Node::Null => "<nil>".to_owned(),
        Node::Bool(b) => b.to_string(),
        Node::Int(i) => i.to_string(),
        Node::Uint(u) => format!("0x{u:x}"),
        Node::Float(f) => go_format_g(*f, false),
        Node::Str(s) => format!("{s:?}"),
        Node::Seq(items) => format!(
            "[]interface {{}}{{{}}}",
            items.iter().map(go_value).collect::<Vec<_>>().join(", ")
        ),
        Node::Map(entries) => format!(
            "map[interface {{}}]interface {{}}{{{}}}",
            entries
                .iter()
                .map(|e| format!("{}:{}", go_value(&e.key), go_value(&e.value)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32 or 64)`, which `%v` also prints: the shortest digits,
/// with an exponent below 1e-4 and from 1e6 up.
pub(super) fn go_format_g(f: f64, single: bool) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    // Rust's `{:e}` prints the shortest digits that read back as the same value.
    let sci = if single {
        format!("{:e}", f as f32)
    } else {
        format!("{f:e}")
    };
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if !(-4..6).contains(&exp) {
        let (head, tail) = digits.split_at(1);
        let dot = if tail.is_empty() { "" } else { "." };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{head}{dot}{tail}e{esign}{:02}", exp.abs());
    }
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let point = (exp + 1) as usize;
    if digits.len() <= point {
        format!("{sign}{digits}{}", "0".repeat(point - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..point], &digits[point..])
    }
}

/// A converted value's kind as an operator-facing error names it ("got a list"): for the
/// settings files read through this module (ACR's `azure.json`, the oidc registries file).
pub fn kind_of(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// The string `sigs.k8s.io/yaml` makes of a mapping key: strings as they are, numbers and booleans
/// printed (floats with 32-bit precision, as it does); a null or unsigned key is an error.
pub fn key_string(key: &Node) -> Result<String, String> {
    match key {
        Node::Str(s) => Ok(s.clone()),
        Node::Int(i) => Ok(i.to_string()),
        Node::Bool(b) => Ok(b.to_string()),
        Node::Float(f) => Ok(match go_format_g(*f, true).as_str() {
            "+Inf" => ".inf".to_owned(),
            "-Inf" => "-.inf".to_owned(),
            "NaN" => ".nan".to_owned(),
            s => s.to_owned(),
        }),
        Node::Null => Err("unsupported map key of type: %!s(<nil>), key: <nil>".to_owned()),
        Node::Uint(u) => Err(format!("unsupported map key of type: uint64, key: 0x{u:x}")),
        // `parse` refuses these already.
        Node::Seq(_) | Node::Map(_) => Err(format!("yaml: invalid map key: {}", go_value(key))),
    }
}

/// Checks what `sigs.k8s.io/yaml` checks when it turns the value into JSON: every key first
/// (its conversion runs before the JSON encoder), then every number (JSON has no NaN or infinity).
pub fn check_json(node: &Node) -> Result<(), String> {
    fn keys(node: &Node) -> Result<(), String> {
        match node {
            Node::Seq(items) => items.iter().try_for_each(keys),
            Node::Map(entries) => entries.iter().try_for_each(|e| {
                key_string(&e.key)?;
                keys(&e.value)
            }),
            _ => Ok(()),
        }
    }
    fn numbers(node: &Node) -> Result<(), String> {
        match node {
            Node::Float(f) if !f.is_finite() => Err(format!(
                "json: unsupported value: {}",
                go_format_g(*f, false)
            )),
            Node::Seq(items) => items.iter().try_for_each(numbers),
            Node::Map(entries) => entries.iter().try_for_each(|e| numbers(&e.value)),
            _ => Ok(()),
        }
    }
    keys(node)?;
    numbers(node)
}

/// The JSON `sigs.k8s.io/yaml` produces for the value (see [`check_json`] for its errors).
pub fn to_json(node: &Node) -> Result<serde_json::Value, String> {
    check_json(node)?;
    fn convert(node: &Node) -> serde_json::Value {
        use serde_json::Value;
        match node {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Int(i) => Value::from(*i),
            Node::Uint(u) => Value::from(*u),
            Node::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Node::Str(s) => Value::String(s.clone()),
            Node::Seq(items) => Value::Array(items.iter().map(convert).collect()),
            Node::Map(entries) => Value::Object(
                entries
                    .iter()
                    .filter_map(|e| Some((key_string(&e.key).ok()?, convert(&e.value))))
                    .collect(),
            ),
        }
    }
    Ok(convert(node))
}
