//! Whether to colour the text view: the user's choice, `NO_COLOR` and whether standard
//! output is a terminal.

use std::io::IsTerminal;

/// When to colour the text view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ColorWhen {
    /// On a terminal, unless `NO_COLOR` is set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Whether to colour text written to standard output (`to_stdout`) or to a file: `Auto`
/// colours only standard output, only when it is a terminal and `NO_COLOR` is unset or
/// empty.
#[must_use]
pub fn use_color(when: ColorWhen, to_stdout: bool) -> bool {
    match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => {
            to_stdout
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_choices_win_and_files_are_never_coloured_automatically() {
        assert!(use_color(ColorWhen::Always, false));
        assert!(!use_color(ColorWhen::Never, true));
        assert!(!use_color(ColorWhen::Auto, false));
    }
}
