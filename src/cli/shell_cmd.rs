//! `hazardserve completions SHELL` and `hazardserve man`: shell completion scripts, manual
//! pages and the Markdown reference, generated from the same command definitions as `--help`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

/// `completions` arguments.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  hazardserve completions bash \\
      > ~/.local/share/bash-completion/completions/hazardserve
  hazardserve completions zsh > ~/.zfunc/_hazardserve
  hazardserve completions fish > ~/.config/fish/completions/hazardserve.fish
  hazardserve completions powershell >> $PROFILE")]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `man` arguments.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  hazardserve man | man -l -
  # hazardserve.1 and one hazardserve-<command>.1 per command:
  hazardserve man --out-dir share/man/man1
  # every command as one Markdown page (the book's CLI reference):
  hazardserve man --markdown > cli.md")]
pub struct ManArgs {
    /// Write one page per command (hazardserve.1, hazardserve-fit.1, ...) into this directory
    /// instead of printing the main page.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Print every command's help as one Markdown page instead (the book's command-line
    /// reference, docs/src/reference/cli.md).
    #[arg(long, conflicts_with = "out_dir")]
    pub markdown: bool,
}

/// Prints the completion script of `cmd` (the whole command line).
pub fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> anyhow::Result<()> {
    clap_complete::generate(args.shell, &mut cmd, "hazardserve", &mut std::io::stdout());
    Ok(())
}

/// Prints the manual page of `cmd` (the whole command line), or writes every page.
pub fn man(args: ManArgs, cmd: clap::Command) -> anyhow::Result<()> {
    if args.markdown {
        print!("{}", super::reference::markdown(cmd));
        return Ok(());
    }
    match args.out_dir {
        None => {
            clap_mangen::Man::new(cmd)
                .render(&mut std::io::stdout())
                .context("writing the manual page")?;
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir)
                .with_context(|| format!("writing manual pages into {}", dir.display()))?;
        }
    }
    Ok(())
}
