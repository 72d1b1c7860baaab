//! The answer of the token endpoints the provider calls itself (AKS identity bindings, the Azure
//! Arc agent): `200 {"access_token":"…","expires_in":…}`. Its own module so that both read it
//! without depending on each other.

use kcp_kubelet::Secret;

/// The `access_token` of a 200 answer. Errors never quote the body (it may hold a token).
pub fn read(body: &[u8]) -> Result<Secret, &'static str> {
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| "the answer is not JSON")?;
    match value.get("access_token") {
        Some(serde_json::Value::String(t)) if !t.trim().is_empty() => Ok(Secret::new(t.clone())),
        Some(_) => Err("the answer's access_token is empty or not a string"),
        None => Err("the answer has no access_token"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_without_quoting_them() {
        assert_eq!(
            read(br#"{"access_token":"tok","expires_in":3600}"#)
                .unwrap()
                .expose(),
            "tok"
        );
        assert_eq!(
            read(br#"{"token":"secret-value"}"#).unwrap_err(),
            "the answer has no access_token"
        );
        assert_eq!(
            read(br#"{"access_token":""}"#).unwrap_err(),
            "the answer's access_token is empty or not a string"
        );
        assert_eq!(read(b"secret").unwrap_err(), "the answer is not JSON");
    }
}
