//! The `kubecache` command: `serve` (the proxy in front of an apiserver),
//! `sim` (the simulated apiserver) and `demo` (both, the proxy in front of
//! the simulator). Flags and configuration are validated before anything
//! is bound; a bad one exits 64 with one line saying why.

mod commands;
mod malloc;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use commands::probe::ProbeArgs;
use commands::serve::ServeArgs;
use commands::sim::{DemoArgs, SimArgs};
use kubecache::cache::CacheError;
use kubecache::config::{ConfigError, LogFormat};
use kubecache::upstream::UpstreamError;
use std::net::SocketAddr;
use std::process::ExitCode;

/// EX_USAGE: bad flags or configuration.
const EXIT_CONFIG: u8 = 64;

/// Why the command stopped: bad flags or configuration, found before any
/// port is bound (exit 64), or a failure to start (exit 1). Each prints as
/// one line.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// A flag's value, as clap or our own checks refuse it.
    #[error("{0}")]
    Flag(String),
    #[error("listening on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// A probe's answer was not 200 (exit 1).
    #[error("probe failed: {0}")]
    Probe(String),
    #[error("metrics: {0}")]
    Metrics(#[source] metrics_exporter_prometheus::BuildError),
    #[error("{0}")]
    Upstream(#[source] UpstreamError),
    #[error("{0}")]
    Cache(#[source] CacheError),
}

impl CliError {
    fn exit_code(&self) -> ExitCode {
        match self {
            CliError::Config(_) | CliError::Flag(_) => ExitCode::from(EXIT_CONFIG),
            _ => ExitCode::FAILURE,
        }
    }
}

#[derive(Parser)]
#[command(
    name = "kubecache",
    version,
    about = "A caching read-through proxy for the Kubernetes API"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// How the log is written to stderr: `text` (colour only on a
    /// terminal, and never with NO_COLOR set) or `json` (an object per
    /// line, for files and container logs). For `serve`, the config
    /// file's `logFormat` when not given. Which lines: KUBECACHE_LOG, as
    /// an env-filter (`info`, `kubecache=debug`, `warn,kubecache::reflector=trace`).
    #[arg(long, global = true, env = "KUBECACHE_LOG_FORMAT", value_parser = parse_log_format)]
    log_format: Option<LogFormat>,
}

fn parse_log_format(s: &str) -> Result<LogFormat, String> {
    s.parse().map_err(|e: ConfigError| e.to_string())
}

#[derive(Subcommand)]
enum Command {
    /// Run the proxy in front of an apiserver.
    Serve(Box<ServeArgs>),
    /// Run the simulated apiserver.
    Sim(SimArgs),
    /// The simulator loaded with realistic objects and the proxy in front of it.
    Demo(DemoArgs),
    /// Asks a kubecache on this host's loopback one health path, as an exec
    /// probe (the kubelet cannot reach a pod's loopback): exit 0 when it
    /// answers 200, 1 otherwise.
    Probe(ProbeArgs),
    /// Prints the shell completion script for bash, zsh or fish: e.g.
    /// `source <(kubecache completion bash)`, or into
    /// /etc/bash_completion.d/kubecache, ~/.zfunc/_kubecache,
    /// ~/.config/fish/completions/kubecache.fish.
    Completion(CompletionArgs),
}

#[derive(clap::Args)]
struct CompletionArgs {
    /// The shell to complete in.
    #[arg(value_parser = ["bash", "zsh", "fish"])]
    shell: String,
}

/// The command line: `Cli`'s, with `serve`'s environment variables.
fn command_line() -> clap::Command {
    Cli::command().mut_subcommand("serve", commands::serve::with_environment)
}

/// The log on stderr, as `format` says; colour only when stderr is a
/// terminal and NO_COLOR is unset or empty (no-color.org).
pub(crate) fn init_tracing(format: LogFormat) {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_env("KUBECACHE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let log = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => log.with_ansi(colour).init(),
        // Fields beside `message` at the top level, as log pipelines
        // (Loki, Elasticsearch, Cloud Logging) index them.
        LogFormat::Json => log.json().flatten_event(true).init(),
    }
}

fn main() -> ExitCode {
    // First, while this is the only thread (see the module).
    let arenas_limited = malloc::limit_arenas(malloc::ARENAS);
    let cli = match command_line()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            // clap's whole message — its suggestion, the allowed values,
            // the usage — under kubecache's own first line.
            let msg = e.to_string();
            let (first, rest) = msg.split_once('\n').unwrap_or((&msg, ""));
            eprintln!("kubecache: {}", first.trim_start_matches("error: "));
            eprint!("{rest}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    if matches!(cli.command, Command::Sim(_)) {
        // Before any thread starts: the exec replaces this process.
        malloc::rerun_with_sim_tcache();
    }
    match run(cli.command, cli.log_format, arenas_limited) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kubecache: {e}");
            e.exit_code()
        }
    }
}

/// Validates the configuration before anything is bound, then runs.
fn run(
    command: Command,
    log_format: Option<LogFormat>,
    arenas_limited: bool,
) -> Result<(), CliError> {
    match command {
        Command::Completion(args) => {
            let shell = match args.shell.as_str() {
                "zsh" => clap_complete::Shell::Zsh,
                "fish" => clap_complete::Shell::Fish,
                _ => clap_complete::Shell::Bash,
            };
            clap_complete::generate(
                shell,
                &mut command_line(),
                "kubecache",
                &mut std::io::stdout(),
            );
            Ok(())
        }
        Command::Sim(args) => commands::sim::run(args, log_format),
        Command::Demo(args) => commands::sim::demo(args, log_format),
        Command::Probe(args) => commands::probe::run(args),
        Command::Serve(args) => commands::serve::run(*args, log_format, arenas_limited),
    }
}

/// The most threads tokio's blocking pool may run at once (its default is
/// 512). Its work here is CPU-bound — compressing and stitching list
/// bodies — so threads beyond the cores add no throughput, only bodies
/// being built at once: under the load benchmark ~40 ran together.
pub(crate) fn blocking_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (2 * cores).max(4)
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .max_blocking_threads(blocking_threads())
        .enable_all()
        .build()
        .expect("the tokio runtime starts")
}
