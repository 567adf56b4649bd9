//! `kubecache-fuzz TARGET`: under AFL++ (built by `cargo afl build`), the
//! fuzz target TARGET fed by afl-fuzz in persistent mode. Built plainly,
//! `kubecache-fuzz TARGET FILE|DIR...` replays inputs through it, to
//! reproduce a crash with a backtrace.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let names = || {
        kubecache_fuzz::TARGETS
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let Some(target) = args.first().and_then(|n| kubecache_fuzz::target(n)) else {
        eprintln!(
            "usage: kubecache-fuzz TARGET [FILE|DIR...]; targets: {}",
            names()
        );
        return ExitCode::from(64);
    };
    run(target, &args[1..])
}

#[cfg(fuzzing)]
fn run(target: fn(&[u8]), _: &[String]) -> ExitCode {
    afl::fuzz!(|data: &[u8]| target(data));
    ExitCode::SUCCESS
}

#[cfg(not(fuzzing))]
fn run(target: fn(&[u8]), paths: &[String]) -> ExitCode {
    let paths: Vec<std::path::PathBuf> = paths.iter().map(Into::into).collect();
    match kubecache_fuzz::replay(target, &paths) {
        Ok(n) => {
            eprintln!("{n} inputs, no crash");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
