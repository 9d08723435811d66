//! Terminal setup and restoration: raw mode and the alternate screen on the way in; on the way
//! out — normal return, error, panic (a hook restores before the message is printed) or
//! SIGTERM/SIGHUP/SIGQUIT (an async-signal-safe handler) — the screen and the terminal modes
//! are put back.

use std::io::{IsTerminal, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Context;
use crossterm::cursor::{Hide, Show};
use crossterm::execute;
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

/// Name of the loader thread (its panics are reported in the TUI, not on the terminal).
pub const LOADER_THREAD: &str = "hazardserve-tui-loader";

/// True while the terminal is in TUI mode.
static ACTIVE: AtomicBool = AtomicBool::new(false);

type Hook = Arc<dyn Fn(&std::panic::PanicHookInfo<'_>) + Send + Sync + 'static>;

/// The terminal in TUI mode; dropping it restores the terminal.
pub struct TerminalGuard {
    /// The ratatui terminal.
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
    previous_hook: Option<Hook>,
}

/// Puts the terminal in TUI mode and installs the panic hook and signal handlers.
pub(crate) fn setup() -> anyhow::Result<TerminalGuard> {
    if !std::io::stdout().is_terminal() {
        anyhow::bail!("standard output is not a terminal");
    }
    let previous: Hook = Arc::from(std::panic::take_hook());
    let chained = previous.clone();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() == Some(LOADER_THREAD) {
            // Caught by the loader and shown in the TUI as an error.
            return;
        }
        restore();
        chained(info);
    }));
    #[cfg(unix)]
    signals::install();
    enable_raw_mode().context("enabling raw mode")?;
    ACTIVE.store(true, Ordering::SeqCst);
    // A note or warning from the store or a loader is printed once the screen is restored.
    crate::diag::hold();
    let mut stdout = std::io::stdout();
    if let Err(e) = execute!(stdout, EnterAlternateScreen, Hide) {
        restore();
        return Err(e).context("entering the alternate screen");
    }
    let terminal = match Terminal::new(CrosstermBackend::new(std::io::stdout())) {
        Ok(t) => t,
        Err(e) => {
            restore();
            return Err(e).context("initialising the terminal");
        }
    };
    Ok(TerminalGuard {
        terminal,
        previous_hook: Some(previous),
    })
}

/// Leaves TUI mode (idempotent; safe to call from any thread).
fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = disable_raw_mode();
        let mut stdout = std::io::stdout();
        let _ = execute!(stdout, LeaveAlternateScreen, Show);
        let _ = stdout.flush();
        crate::diag::release();
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
        #[cfg(unix)]
        signals::uninstall();
        // The hook cannot be changed while unwinding (it would abort); it is only needed for
        // later panics anyway.
        if let Some(prev) = self
            .previous_hook
            .take()
            .filter(|_| !std::thread::panicking())
        {
            let _ = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| prev(info)));
        }
    }
}

#[cfg(unix)]
mod signals {
    //! Restores the terminal on SIGTERM, SIGHUP and SIGQUIT, then dies of the signal.

    use std::sync::atomic::{AtomicI32, Ordering};
    use std::sync::OnceLock;

    const SIGNALS: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

    /// Terminal modes before raw mode, and the descriptor they belong to.
    static SAVED: OnceLock<libc::termios> = OnceLock::new();
    static TTY_FD: AtomicI32 = AtomicI32::new(-1);

    extern "C" fn on_signal(sig: libc::c_int) {
        const LEAVE: &[u8] = b"\x1b[?1049l\x1b[?25h";
        // SAFETY: write, tcsetattr, signal and raise are async-signal-safe; SAVED is only read.
        unsafe {
            let _ = libc::write(1, LEAVE.as_ptr().cast(), LEAVE.len());
            let fd = TTY_FD.load(Ordering::SeqCst);
            if let Some(t) = SAVED.get() {
                if fd >= 0 {
                    libc::tcsetattr(fd, libc::TCSANOW, t);
                }
            }
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }

    pub(super) fn install() {
        // SAFETY: plain libc calls on a descriptor we own; the handler only uses
        // async-signal-safe calls.
        unsafe {
            if TTY_FD.load(Ordering::SeqCst) < 0 {
                let fd = libc::open(c"/dev/tty".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
                if fd >= 0 {
                    let mut t: libc::termios = std::mem::zeroed();
                    if libc::tcgetattr(fd, &mut t) == 0 {
                        let _ = SAVED.set(t);
                        TTY_FD.store(fd, Ordering::SeqCst);
                    } else {
                        libc::close(fd);
                    }
                }
            }
            for s in SIGNALS {
                libc::signal(s, on_signal as *const () as libc::sighandler_t);
            }
        }
    }

    pub(super) fn uninstall() {
        // SAFETY: restoring the default dispositions.
        unsafe {
            for s in SIGNALS {
                libc::signal(s, libc::SIG_DFL);
            }
        }
    }
}
