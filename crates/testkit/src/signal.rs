//! Signals sent without delay, for tests of what a process does when signalled at a given
//! moment (right after it printed its URL, right after a log line).

use std::io::Write as _;
use std::process::{Child, Command, Stdio};

/// A shell already running and waiting to send one signal: [`ArmedKill::fire`] delivers it
/// within microseconds (`kill` is a shell builtin), where spawning kill(1) at that moment takes
/// long enough to hide a race.
pub struct ArmedKill {
    shell: Child,
}

impl ArmedKill {
    /// Starts the shell that will send `SIG<name>` (`"TERM"`, `"INT"`).
    pub fn new(name: &str) -> ArmedKill {
        let shell = Command::new("sh")
            .args(["-c", "read pid && kill -s \"$0\" \"$pid\"", name])
            .stdin(Stdio::piped())
            .spawn()
            .expect("sh runs");
        ArmedKill { shell }
    }

    /// Sends the signal to `pid` now, and waits for the shell (it exits at once).
    pub fn fire(mut self, pid: u32) {
        let mut stdin = self.shell.stdin.take().expect("stdin is piped");
        writeln!(stdin, "{pid}").expect("the shell reads the PID");
        drop(stdin);
        assert!(self.shell.wait().expect("the shell ends").success(), "kill -s failed");
    }
}
