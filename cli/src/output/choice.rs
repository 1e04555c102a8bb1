//! How a command chooses its output: the `-o/--output FILE`, `--format` and `--json`
//! options every command that writes a result takes ([`OutputArgs`]), the formats one
//! command writes ([`Formats`], with the help of those options), the kinds of file an
//! extension names ([`Kind`]), and the one rule that turns them into a format ([`choose`]).

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::error::Usage;

/// Every kind of file a command writes, as its extension names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `.txt`, `.text`
    Text,
    /// `.json`
    Json,
    /// `.csv`
    Csv,
    /// `.tsv`
    Tsv,
    /// `.mct`
    Mct,
    /// `.dot`, `.gv`
    Dot,
    /// `.xml`
    Xml,
    /// `.html`, `.htm`
    Html,
    /// `.svg`
    Svg,
    /// `.png`
    Png,
}

impl Kind {
    /// The kind a file's extension names, if any.
    pub(crate) fn of_path(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "txt" | "text" => Self::Text,
            "json" => Self::Json,
            "csv" => Self::Csv,
            "tsv" => Self::Tsv,
            "mct" => Self::Mct,
            "dot" | "gv" => Self::Dot,
            "xml" => Self::Xml,
            "html" | "htm" => Self::Html,
            "svg" => Self::Svg,
            "png" => Self::Png,
            _ => return None,
        })
    }

    /// The name of the format a file of this kind holds (`text`, `json`, `xml`…).
    fn name(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Json => "json",
            Self::Csv => "csv",
            Self::Tsv => "tsv",
            Self::Mct => "mct",
            Self::Dot => "dot",
            Self::Xml => "xml",
            Self::Html => "html",
            Self::Svg => "svg",
            Self::Png => "png",
        }
    }
}

/// The formats one command writes, and the help of its output options ([`OutputArgs`]):
/// `--format`'s always names the command's formats and defaults; `--json`'s and `-o`'s
/// are the shared text unless the command says more.
pub(crate) trait Formats: Copy + PartialEq + ValueEnum + Send + Sync + 'static {
    /// The format when neither `--format` nor the file's extension chooses one.
    const DEFAULT: Self;
    /// What `--json` means.
    const JSON: Self;
    /// The help of `--format`: the formats and how the default is chosen.
    const FORMAT_HELP: &'static str;
    /// The help of `--json`.
    const JSON_HELP: &'static str = "Shorthand for `--format json`";
    /// The help of `-o/--output FILE`.
    const OUTPUT_HELP: &'static str = "Write to FILE (atomically; its directory must exist) \
                                       instead of standard output; `-` is standard output";
    /// The format a kind of file means for this command, if it writes that kind: by
    /// default, the format of the same name.
    fn of_kind(kind: Kind) -> Option<Self> {
        Self::value_variants()
            .iter()
            .find(|f| name_of(*f) == kind.name())
            .copied()
    }
}

/// The name of a format on the command line (`hwloc-xml`, `json`…).
pub(crate) fn name_of<F: ValueEnum>(f: &F) -> String {
    f.to_possible_value()
        .map_or_else(|| "?".to_string(), |v| v.get_name().to_string())
}

/// The names of every format of `F`, as "a, b or c".
fn names_of<F: Formats>() -> String {
    let names: Vec<String> = F::value_variants().iter().map(name_of).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

/// Whether `path` means standard output (`-o -`).
pub(crate) fn is_stdout(path: Option<&Path>) -> bool {
    path.is_none_or(|p| p.as_os_str() == "-")
}

/// The format of a command's output: `--json`, else `--format`, else the extension of the
/// `-o` file, else `F::DEFAULT`.
///
/// # Errors
///
/// A usage error when the file's extension names a format this command does not write,
/// or a different one than `--format`/`--json`.
pub(crate) fn choose<F: Formats>(
    given: Option<F>,
    json: bool,
    path: Option<&Path>,
) -> Result<F, Usage> {
    let given = if json { Some(F::JSON) } else { given };
    let file = path.filter(|p| !is_stdout(Some(p)));
    let by_ext = match file.and_then(|p| Kind::of_path(p).map(|k| (p, k))) {
        Some((p, kind)) => match F::of_kind(kind) {
            Some(f) => Some(f),
            None => {
                return Err(Usage(format!(
                    "-o {}: the extension names a format this command does not write \
                     (it writes {}): name the file for one of them, or drop the extension",
                    p.display(),
                    names_of::<F>()
                )))
            }
        },
        None => None,
    };
    match (given, by_ext) {
        (Some(g), Some(e)) if g != e => Err(Usage(format!(
            "{} conflicts with -o {}, whose extension means {}: drop one, or name the file \
             to match",
            if json {
                "--json".to_string()
            } else {
                format!("--format {}", name_of(&g))
            },
            file.unwrap_or_else(|| Path::new("")).display(),
            name_of(&e)
        ))),
        (Some(g), _) => Ok(g),
        (None, Some(e)) => Ok(e),
        (None, None) => Ok(F::DEFAULT),
    }
}

/// `-o/--output FILE`, `--format F` and `--json`: where a command's output goes, and in
/// which of the formats `F` it writes. Every command that writes a result flattens it
/// (`#[command(flatten)]`); the help of each option is `F`'s ([`Formats`]).
#[derive(Debug, Clone, Args)]
pub(crate) struct OutputArgs<F: Formats> {
    /// `--format`: the format, else the `-o` file's extension, else `F::DEFAULT`.
    #[arg(long, value_enum, help = F::FORMAT_HELP)]
    pub(crate) format: Option<F>,
    /// `--json`: `F::JSON`.
    #[arg(long, conflicts_with = "format", help = F::JSON_HELP)]
    pub(crate) json: bool,
    /// `-o/--output FILE`: the file, `-` or nothing for the command's usual stream.
    #[arg(short = 'o', long = "output", value_name = "FILE", help = F::OUTPUT_HELP)]
    pub(crate) output: Option<PathBuf>,
}

impl<F: Formats> Default for OutputArgs<F> {
    fn default() -> Self {
        Self {
            format: None,
            json: false,
            output: None,
        }
    }
}

impl<F: Formats> OutputArgs<F> {
    /// The chosen format (see [`choose`]).
    ///
    /// # Errors
    ///
    /// A usage error when the extension of the file names another format.
    pub(crate) fn format(&self) -> Result<F, Usage> {
        choose(self.format, self.json, self.output.as_deref())
    }

    /// Whether the output is to be JSON.
    ///
    /// # Errors
    ///
    /// As [`OutputArgs::format`].
    pub(crate) fn is_json(&self) -> Result<bool, Usage> {
        Ok(self.format()? == F::JSON)
    }
}
