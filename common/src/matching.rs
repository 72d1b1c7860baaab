//! STUB: replaced by the real module.
pub fn urls_match(pattern: &str, target: &str) -> bool {
    pattern == target || target.starts_with(&format!("{pattern}/"))
}
pub fn match_image(pattern: &str, image: &str) -> bool {
    urls_match(pattern, image)
}
pub fn normalize_auth_key(key: &str) -> Result<String, String> {
    Ok(key.trim_start_matches("https://").to_string())
}
pub fn keyring_lookup<'a>(keys: &[&'a str], image: &str) -> Vec<&'a str> {
    keys.iter()
        .copied()
        .filter(|k| {
            normalize_auth_key(k)
                .map(|n| urls_match(&n, image))
                .unwrap_or(false)
        })
        .collect()
}
