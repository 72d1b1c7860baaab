//! Log lines for failures that repeat: a call retried every few seconds logs its failure once,
//! at its level, until the failure changes or a success clears it; the repeats go to debug.
//! [`log_once!`](crate::log_once) logs under the caller's module, as every other line does.

/// The last line logged for one repeating activity.
#[derive(Debug, Default)]
pub struct Repeats {
    last: Option<String>,
}

impl Repeats {
    /// Whether `line` is news (not the line logged last); it is remembered as the last one.
    pub fn fresh(&mut self, line: &str) -> bool {
        if self.last.as_deref() == Some(line) {
            return false;
        }
        self.last = Some(line.to_owned());
        true
    }

    /// The activity succeeded: its next failure is logged at its level again.
    pub fn clear(&mut self) {
        self.last = None;
    }
}

/// `log_once!(repeats, level, line)`: logs `line` at `level` (a `tracing::Level`), or at debug
/// when `repeats` last logged the same line.
#[macro_export]
macro_rules! log_once {
    ($repeats:expr, $level:expr, $line:expr $(,)?) => {{
        let line: &str = $line;
        if !$repeats.fresh(line) {
            tracing::debug!("{line}");
        } else {
            match $level {
                tracing::Level::ERROR => tracing::error!("{line}"),
                tracing::Level::WARN => tracing::warn!("{line}"),
                tracing::Level::INFO => tracing::info!("{line}"),
                _ => tracing::debug!("{line}"),
            }
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_news_until_it_repeats_or_is_cleared() {
        let mut repeats = Repeats::default();
        assert!(repeats.fresh("a"));
        assert!(!repeats.fresh("a"));
        assert!(repeats.fresh("b"));
        assert!(repeats.fresh("a"));
        repeats.clear();
        assert!(repeats.fresh("a"));
    }
}
