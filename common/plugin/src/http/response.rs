//! An answer as the client hands it back: status, body (capped) and headers.

use std::time::SystemTime;

/// An answer: always 2xx from [`HttpClient::send`], any status from [`HttpClient::fetch`].
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// The HTTP status, which callers of `fetch` turn into their own errors.
    pub status: u16,
    /// Read whole, up to the client's body limit; may hold a token, so never logged as is.
    pub body: Vec<u8>,
    /// Response headers, lower-cased names.
    pub headers: Vec<(String, String)>,
}

impl HttpResponse {
    /// The first header of that (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a header, in order: some headers (`WWW-Authenticate`) may be repeated, each
    /// with its own meaning. Values that were not text were dropped on receipt.
    pub fn header_values(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The server's clock when it answered (its `Date` header), when readable: expiry times in
    /// the answer are written by that clock, not the node's.
    pub fn date(&self) -> Option<SystemTime> {
        self.header("date").and_then(crate::time::parse_http_date)
    }
}
