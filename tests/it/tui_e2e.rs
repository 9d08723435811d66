//! End-to-end: the real binary in a pseudo-terminal (a detached tmux session), driven with
//! keys through every screen, checked on the screen text, resized, and quit. Skips (with a
//! printed reason) when tmux is not installed.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use super::common;
use super::tui_common::demo_store;

/// A private tmux server (its own socket) with one session running a command.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn available() -> bool {
        Command::new("tmux")
            .arg("-V")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    }

    fn start(name: &str, cmd: &str, w: u16, h: u16) -> Tmux {
        let t = Tmux {
            socket: format!("hazardserve-tui-{name}-{}", std::process::id()),
        };
        let out = t.run(&[
            "new-session",
            "-d",
            "-s",
            "tui",
            "-x",
            &w.to_string(),
            "-y",
            &h.to_string(),
            cmd,
        ]);
        assert!(out.status.success(), "tmux new-session: {out:?}");
        t
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("run tmux")
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "tui"];
        args.extend_from_slice(keys);
        let out = self.run(&args);
        assert!(out.status.success(), "send-keys {keys:?}: {out:?}");
    }

    fn literal(&self, text: &str) {
        let out = self.run(&["send-keys", "-t", "tui", "-l", text]);
        assert!(out.status.success(), "send-keys -l {text:?}: {out:?}");
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "tui"]).stdout).into_owned()
    }

    /// Waits until the screen shows every one of `needles`; returns the screen.
    fn wait_for(&self, needles: &[&str]) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if needles.iter().all(|n| s.contains(n)) {
                return s;
            }
            if start.elapsed() > Duration::from_secs(60) {
                panic!("timed out waiting for {needles:?}; the screen is:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Tmux {
    /// Waits until the screen no longer shows `needle`.
    fn wait_gone(&self, needle: &str) {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if !s.contains(needle) {
                return;
            }
            if start.elapsed() > Duration::from_secs(60) {
                panic!("timed out waiting for {needle:?} to go; the screen is:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

fn shell_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

#[test]
fn tui_e2e_keys_through_every_screen() {
    if !Tmux::available() {
        eprintln!("skipping tui_e2e_keys_through_every_screen: tmux is not installed (apt-get install tmux)");
        return;
    }
    let store = demo_store();
    let cmd = format!(
        "env -u HAZARDSERVE_STORE TERM=xterm-256color {} --store {} tui; echo \"tui exited with $?\"; sleep 120",
        shell_quote(Path::new(env!("CARGO_BIN_EXE_hazardserve"))),
        shell_quote(store)
    );
    let t = Tmux::start("keys", &cmd, 120, 36);
    t.wait_for(&[
        "1 Sources",
        "sample-spot",
        "Sources (4)",
        "k=0.73 decreasing",
    ]);
    t.keys(&["2"]);
    t.wait_for(&["Nodes of sample-spot", "us-east-1a_v100_1", "censored"]);
    t.keys(&["j"]);
    t.wait_for(&["▶ us-east-1c_v100_1"]);
    t.keys(&["Enter"]);
    t.wait_for(&["us-east-1c_v100_1 ·", "P(up 1 h more)", "at risk"]);
    t.keys(&["4"]);
    t.wait_for(&["Policies (11)", "hazard --overlap", "Completion time CDF"]);
    t.keys(&["Enter"]);
    t.wait_for(&["Request #", "Re-ran window", "it reproduces"]);
    t.keys(&["6"]);
    t.wait_for(&["Trigger ·", "4500 tokens", "trigger"]);
    t.literal("+");
    t.wait_for(&["8000 tokens"]);
    t.keys(&["7"]);
    t.wait_for(&[
        "demo-map",
        "hazard term: hazard − hazard-pooled",
        "sample-hpc · phone",
    ]);
    t.keys(&["j", "Enter"]);
    t.wait_for(&["demo-map cell", "hardware.preset=m1-max", "Policies (13)"]);
    t.keys(&["h"]);
    t.wait_for(&["Selected cell"]);
    t.literal("?");
    t.wait_for(&["Keys", "drill down"]);
    // Any key closes the help (not Escape here: ESC followed quickly by a key reads as Alt+key).
    t.literal("?");
    t.wait_gone("drill down");
    t.keys(&["1"]);
    t.wait_for(&["Sources (4)"]);
    t.literal("/gce");
    t.keys(&["Enter"]);
    t.wait_for(&["Sources (1)", "sample-gce"]);
    // Resize: the frame is redrawn for the new size.
    let out = t.run(&["resize-window", "-t", "tui", "-x", "80", "-y", "24"]);
    assert!(out.status.success(), "resize-window: {out:?}");
    let s = t.wait_for(&["1 Sources │ 2 Nodes"]);
    assert!(
        s.lines().all(|l| l.chars().count() <= 80),
        "lines fit the new width:\n{s}"
    );
    t.keys(&["q"]);
    let s = t.wait_for(&["tui exited with 0"]);
    assert!(
        !s.contains("Sources (1)"),
        "the alternate screen is gone after quitting:\n{s}"
    );
}

#[test]
fn tui_e2e_terminal_restored_after_sigterm() {
    if !Tmux::available() {
        eprintln!("skipping tui_e2e_terminal_restored_after_sigterm: tmux is not installed");
        return;
    }
    let store = demo_store();
    let tmp = tempfile::tempdir().unwrap();
    let pidfile = tmp.path().join("pid");
    // The shell writes its pid and execs the TUI (same pid), in the foreground of the pane.
    let inner = format!(
        "echo $$ > {}; exec env -u HAZARDSERVE_STORE TERM=xterm-256color {} --store {} tui",
        shell_quote(&pidfile),
        shell_quote(Path::new(env!("CARGO_BIN_EXE_hazardserve"))),
        shell_quote(store)
    );
    let cmd = format!(
        "sh -c {}; echo \"tui exited with $?\"; stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon; sleep 120",
        shell_quote(Path::new(&inner))
    );
    let t = Tmux::start("sigterm", &cmd, 100, 30);
    t.wait_for(&["Sources (4)"]);
    let pid = std::fs::read_to_string(&pidfile)
        .expect("the pid file")
        .trim()
        .to_string();
    assert!(pid.parse::<u32>().is_ok(), "pid {pid:?}");
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    let s = t.wait_for(&["tui exited with 143", "icanon"]);
    assert!(
        s.contains("icanon") && !s.contains("-icanon"),
        "canonical mode is back:\n{s}"
    );
    assert!(
        !s.contains("Sources (4)"),
        "the alternate screen is gone:\n{s}"
    );
}

/// Runs the TUI with a `HAZARDSERVE_FAULT` test hook, then prints its exit status and the
/// terminal's canonical-mode flag.
fn start_with_fault(name: &str, fault: &str) -> Tmux {
    let cmd = format!(
        "env -u HAZARDSERVE_STORE HAZARDSERVE_FAULT={fault} TERM=xterm-256color {} --store {} tui; echo \"tui exited with $?\"; stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon; sleep 120",
        shell_quote(Path::new(env!("CARGO_BIN_EXE_hazardserve-faults"))),
        shell_quote(demo_store())
    );
    Tmux::start(name, &cmd, 100, 30)
}

#[test]
fn tui_e2e_terminal_restored_after_panic() {
    if !Tmux::available() {
        eprintln!("skipping tui_e2e_terminal_restored_after_panic: tmux is not installed");
        return;
    }
    let t = start_with_fault("panic", "tui-panic");
    let s = t.wait_for(&["tui exited with 101", "icanon"]);
    assert!(
        s.contains("injected fault"),
        "the panic message is printed:\n{s}"
    );
    assert!(!s.contains("-icanon"), "canonical mode is back:\n{s}");
    assert!(
        !s.contains("1 Sources │"),
        "the alternate screen is gone:\n{s}"
    );
}

#[test]
fn tui_e2e_loader_panic_is_shown_not_fatal() {
    if !Tmux::available() {
        eprintln!("skipping tui_e2e_loader_panic_is_shown_not_fatal: tmux is not installed");
        return;
    }
    let t = start_with_fault("loader", "tui-loader-panic");
    t.wait_for(&[
        "Reading the store failed",
        "internal error",
        "injected loader fault",
    ]);
    t.keys(&["2"]);
    t.wait_for(&["2 Nodes"]);
    t.keys(&["q"]);
    let s = t.wait_for(&["tui exited with 0", "icanon"]);
    assert!(!s.contains("-icanon"), "{s}");
}

#[test]
fn tui_refuses_without_a_terminal() {
    let mut c = common::hs(demo_store());
    c.arg("tui");
    let out = common::fails(c);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs a terminal"), "{err}");
}
