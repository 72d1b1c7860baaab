//! Cache keys: what an entry is for (provider and scope, in clear) and who fetched it (identity
//! parts, only as a hash), and how fleet mode's shared identity ([`SharedIdentity`], checked
//! here because a key is what it changes) stands in for the node's own.

use kcp_kubelet::secret::Secret;

use super::SHARED_PART;
use super::issuer::Issuer;
use crate::jwt::ServiceAccountClaims;

/// What a cache entry is for: a provider, the scope of its tokens and a fingerprint of the
/// identity that obtained them. Build one with [`CacheKey::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheKey {
    canonical: String,
    /// Length-prefixed identity parts; only their hash leaves this type.
    identity: Vec<u8>,
    /// Length-prefixed parts that say who the node itself is (its cloud credentials); a
    /// [`SharedIdentity`] stands in for them. Empty: the key is not the node's own identity.
    node: Vec<u8>,
    /// Set by [`Self::service_account`]: a pod's identity, never shared between nodes.
    pod: bool,
    /// Set by [`Self::shared_as`]: the shared identity's name, kept readable in the entry.
    shared: Option<String>,
}

impl CacheKey {
    /// A key for tokens of `issuer`. Add scope and identity parts, then use it.
    pub fn new(issuer: Issuer) -> Self {
        let provider = issuer.name();
        CacheKey {
            canonical: format!("provider={}", escape(provider)),
            identity: lp(provider),
            node: Vec::new(),
            pod: false,
            shared: None,
        }
    }

    /// Adds a scope part (region, login server, audience…), kept readable in the entry.
    pub fn scope(mut self, name: &str, value: &str) -> Self {
        self.canonical
            .push_str(&format!(";{}={}", escape(name), escape(value)));
        self
    }

    /// Adds an identity part; only its hash is kept. Never pass a secret: a hash of a
    /// low-entropy secret can be guessed.
    pub fn identity(mut self, name: &str, value: &str) -> Self {
        self.identity.extend(lp(name));
        self.identity.extend(lp(value));
        self
    }

    /// Adds each environment variable in `names` (set or not) to the identity.
    pub fn identity_env(self, names: &[&str]) -> Self {
        names.iter().fold(self, |key, name| {
            let value = std::env::var(name).ok();
            key.identity(name, env_value(value.as_deref()))
        })
    }

    /// Adds a part saying who the node itself is (its ambient cloud credentials). Unlike
    /// [`Self::identity`], a node in fleet mode replaces these parts with its
    /// [`SharedIdentity`], so nodes that share one cloud identity share the entry.
    pub fn node_identity(mut self, name: &str, value: &str) -> Self {
        self.node.extend(lp(name));
        self.node.extend(lp(value));
        self
    }

    /// [`Self::node_identity`] for each environment variable in `names` (set or not).
    pub fn node_identity_env(self, names: &[&str]) -> Self {
        names.iter().fold(self, |key, name| {
            let value = std::env::var(name).ok();
            key.node_identity(name, env_value(value.as_deref()))
        })
    }

    /// This key as a node of `shared` computes it: the node's own identity parts replaced by the
    /// shared identity's name, the scope and every other part kept (an assumed role stays part
    /// of who the token is for). `None` when the key is not for the node's own identity: a
    /// pod's service account, or a provider that names no node identity parts.
    pub fn shared_as(&self, shared: &SharedIdentity) -> Option<CacheKey> {
        if self.pod || self.node.is_empty() {
            return None;
        }
        let mut key = self.clone();
        key.node = lp("shared-identity");
        key.node.extend(lp(shared.name()));
        key.shared = Some(shared.name().to_owned());
        Some(key)
    }

    /// Adds the service account a pod's token was minted for (namespace, name, UID and the
    /// token's audiences, from its claims) to the identity: pods of one service account share an
    /// entry, other accounts never do, and the token itself stays out of the key. `None` (do not
    /// cache) for a token without those claims.
    pub fn service_account(self, token: &Secret) -> Option<Self> {
        match ServiceAccountClaims::from_token(token.expose()) {
            Some(claims) => Some(self.with_claims(&claims)),
            None => {
                tracing::info!(
                    "token cache not used: the service-account token carries no namespace/name/uid claims"
                );
                None
            }
        }
    }

    /// [`Self::service_account`] with the claims already read.
    pub(super) fn with_claims(mut self, claims: &ServiceAccountClaims) -> Self {
        self.pod = true;
        let key = self
            .identity("sa.namespace", &claims.namespace)
            .identity("sa.name", &claims.name)
            .identity("sa.uid", &claims.uid);
        claims
            .audiences
            .iter()
            .fold(key, |key, aud| key.identity("sa.aud", aud))
    }

    /// The text stored in the entry and compared on read: scope in clear, identity hashed.
    pub fn canonical(&self) -> String {
        let mut context = ring::digest::Context::new(&ring::digest::SHA256);
        context.update(&self.identity);
        context.update(&self.node);
        let shared = self
            .shared
            .as_deref()
            .map(|name| format!(";{SHARED_PART}={}", escape(name)))
            .unwrap_or_default();
        format!(
            "{}{shared};identity=sha256:{}",
            self.canonical,
            crate::hex::encode(context.finish().as_ref())
        )
    }

    /// The entry's file name in a cache directory (and its data key in the fleet's Secret).
    pub fn file_name(&self) -> String {
        format!("{}.json", self.file_stem())
    }

    /// The entry's file name stem: a hash of the canonical text.
    pub(super) fn file_stem(&self) -> String {
        stem_of(&self.canonical())
    }
}

/// The name of a group of nodes that share one cloud identity (e.g. one node role), and so may
/// share registry tokens: `--token-cache-shared-identity`. Lowercase letters, digits, `-` and
/// `.`, starting and ending with a letter or digit, at most 63 characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedIdentity(String);

impl SharedIdentity {
    /// Checks `name`; the error says what is wrong with it.
    pub fn parse(name: &str) -> Result<Self, String> {
        let ok_edge =
            |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        let valid = !name.is_empty()
            && name.len() <= 63
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
            && ok_edge(name.chars().next())
            && ok_edge(name.chars().last());
        if valid {
            Ok(SharedIdentity(name.to_owned()))
        } else {
            Err(format!(
                "shared identity {name:?} is not a name: use 1 to 63 lowercase letters, digits, '-' or '.', starting and ending with a letter or digit"
            ))
        }
    }

    /// The name nodes opt in with.
    pub fn name(&self) -> &str {
        &self.0
    }
}

/// The file name stem of the entry whose key's canonical text is `canonical`.
pub(super) fn stem_of(canonical: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, canonical.as_bytes());
    crate::hex::encode(&digest.as_ref()[..16])
}

/// How an environment variable's value enters a key: unset differs from every value.
fn env_value(value: Option<&str>) -> &str {
    value.unwrap_or("\u{0}unset")
}

/// Length-prefixed bytes, so `("ab","c")` and `("a","bc")` hash differently.
fn lp(text: &str) -> Vec<u8> {
    let mut out = (text.len() as u64).to_be_bytes().to_vec();
    out.extend_from_slice(text.as_bytes());
    out
}

/// Keeps `;` and `=` unambiguous in the canonical text.
pub(super) fn escape(text: &str) -> String {
    text.replace('%', "%25")
        .replace(';', "%3B")
        .replace('=', "%3D")
}
