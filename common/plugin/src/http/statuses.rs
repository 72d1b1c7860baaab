//! Sets of HTTP statuses ([`Statuses`]): which answers are a success, which are worth another
//! try, which a caller takes. Below the client, the errors and the retry rules, which all read
//! them.

/// A set of HTTP statuses, as inclusive ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Statuses(pub &'static [(u16, u16)]);

impl Statuses {
    /// 2xx.
    pub const SUCCESS: Statuses = Statuses(&[(200, 299)]);
    /// Every status: the caller judges each answer itself.
    pub const ANY: Statuses = Statuses(&[(0, u16::MAX)]);
    /// 429 and 5xx: throttling and server trouble, which another try may get past.
    pub const THROTTLED_OR_SERVER_ERROR: Statuses = Statuses(&[(429, 429), (500, u16::MAX)]);

    /// Whether `status` is in the set.
    pub fn contains(self, status: u16) -> bool {
        self.0
            .iter()
            .any(|&(low, high)| (low..=high).contains(&status))
    }
}
