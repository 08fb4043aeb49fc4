//! CPU time of a process, all its threads together (user and system), for
//! the campaign's slow and hang limits: unlike the wall clock it does not
//! grow while the machine's other work has the processor or while the
//! campaign is paused (SIGSTOP), so a case is slow only for its own work.

use std::time::Duration;

/// The CPU time this process has used so far; `None` where it cannot be
/// read (not on Unix).
pub fn own() -> Option<Duration> {
    #[cfg(unix)]
    {
        read(libc::CLOCK_PROCESS_CPUTIME_ID)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The CPU time process `pid` (a worker this process started) has used so
/// far; `None` where it cannot be read (not on Linux, or the process is
/// gone).
pub fn of(pid: u32) -> Option<Duration> {
    #[cfg(target_os = "linux")]
    {
        let mut clock: libc::clockid_t = 0;
        let pid = libc::pid_t::try_from(pid).ok()?;
        // SAFETY: `clock_getcpuclockid` writes one `clockid_t` through a
        // valid, exclusive pointer.
        #[allow(unsafe_code)]
        let status = unsafe { libc::clock_getcpuclockid(pid, &mut clock) };
        if status != 0 {
            return None;
        }
        read(clock)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

#[cfg(unix)]
fn read(clock: libc::clockid_t) -> Option<Duration> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec` through a valid,
    // exclusive pointer.
    #[allow(unsafe_code)]
    let status = unsafe { libc::clock_gettime(clock, &mut now) };
    if status != 0 {
        return None;
    }
    Some(Duration::new(
        u64::try_from(now.tv_sec).ok()?,
        u32::try_from(now.tv_nsec).ok()?,
    ))
}
