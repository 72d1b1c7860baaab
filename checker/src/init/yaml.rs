//! The document as a small deterministic YAML, in the layout `scripts/install` has always
//! written: every free-form value double-quoted, so YAML 1.1 (the kubelet), YAML 1.2 and JSON
//! readers all read the same strings.

use super::document::Document;

/// A YAML double-quoted scalar: `\` and `"` escaped, control and line-separator characters as
/// escapes, everything else as is (YAML 1.1 and 1.2 read it the same, and so does JSON).
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}') => {
                out.push_str(&format!("\\u{:04X}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A scalar this module writes itself (names, apiVersions, cacheType): plain when it cannot be
/// read as anything but that string, quoted otherwise.
fn plain(s: &str) -> String {
    let safe = s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '/' | '_'))
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
        );
    if safe { s.to_owned() } else { quoted(s) }
}

fn yaml_list(out: &mut String, indent: &str, items: &[String]) {
    for item in items {
        out.push_str(indent);
        out.push_str("- ");
        out.push_str(&quoted(item));
        out.push('\n');
    }
}

/// The document as YAML, in the layout `scripts/install` has always written.
pub(super) fn to_yaml(doc: &Document, header: &[String]) -> String {
    let mut out = String::new();
    for line in header {
        out.push_str(&format!("# {line}\n"));
    }
    out.push_str(&format!("apiVersion: {}\n", plain(&doc.api_version)));
    out.push_str(&format!("kind: {}\n", plain(doc.kind)));
    out.push_str("providers:\n");
    for p in &doc.providers {
        out.push_str(&format!("  - name: {}\n", plain(p.name)));
        out.push_str("    matchImages:\n");
        yaml_list(&mut out, "      ", &p.match_images);
        out.push_str(&format!(
            "    defaultCacheDuration: {}\n",
            quoted(&p.default_cache_duration)
        ));
        out.push_str(&format!("    apiVersion: {}\n", plain(&p.api_version)));
        if !p.args.is_empty() {
            out.push_str("    args:\n");
            yaml_list(&mut out, "      ", &p.args);
        }
        if !p.env.is_empty() {
            out.push_str("    env:\n");
            for e in &p.env {
                out.push_str(&format!(
                    "      - name: {}\n        value: {}\n",
                    quoted(&e.name),
                    quoted(&e.value)
                ));
            }
        }
        if let Some(t) = &p.token_attributes {
            out.push_str("    tokenAttributes:\n");
            out.push_str(&format!(
                "      serviceAccountTokenAudience: {}\n",
                quoted(&t.service_account_token_audience)
            ));
            out.push_str(&format!("      cacheType: {}\n", plain(t.cache_type)));
            out.push_str(&format!(
                "      requireServiceAccount: {}\n",
                t.require_service_account
            ));
            for (field, keys) in [
                (
                    "requiredServiceAccountAnnotationKeys",
                    &t.required_service_account_annotation_keys,
                ),
                (
                    "optionalServiceAccountAnnotationKeys",
                    &t.optional_service_account_annotation_keys,
                ),
            ] {
                if !keys.is_empty() {
                    out.push_str(&format!("      {field}:\n"));
                    yaml_list(&mut out, "        ", keys);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_escapes_what_yaml_and_json_would_misread() {
        assert_eq!(quoted(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(quoted("x\ny\u{7}\u{2028}"), r#""x\ny\u0007\u2028""#);
        assert_eq!(quoted("robot$puller"), r#""robot$puller""#);
        assert_eq!(
            plain("credentialprovider.kubelet.k8s.io/v1"),
            "credentialprovider.kubelet.k8s.io/v1"
        );
        assert_eq!(plain("true"), "\"true\"");
        assert_eq!(plain("1h"), "\"1h\"");
    }
}
