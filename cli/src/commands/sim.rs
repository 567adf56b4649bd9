//! `kubecache sim` (the simulated apiserver) and `kubecache demo` (the
//! simulator loaded with realistic objects and the proxy in front of it).

use super::serve::run_serve;
use super::{listen, parse_addr, shutdown_signal};
use crate::{init_tracing, runtime, CliError};
use kubecache::config::{LogFormat, Settings};
use kubecache_sim::faults::FaultCommand;
use kubecache_sim::{Personality, Sim, SimOptions};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

#[derive(clap::Args, Clone)]
pub struct SimArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// Namespaces the generated objects are spread over (`default`,
    /// `kube-system`, then `team-NN`).
    #[arg(long, default_value_t = 5)]
    namespaces: usize,
    /// Pods to generate, in every phase, owned by generated deployments.
    #[arg(long, default_value_t = 100)]
    pods: usize,
    /// ConfigMaps to generate.
    #[arg(long, default_value_t = 50)]
    configmaps: usize,
    /// Nodes to generate (the pods are scheduled on them).
    #[arg(long, default_value_t = 5)]
    nodes: usize,
    /// Pod updates per second.
    #[arg(long, default_value_t = 0.0)]
    churn: f64,
    /// Random seed for generated objects.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Fault: answer the first N requests with 500.
    #[arg(long, default_value_t = 0)]
    fail_requests: u64,
    /// Fault: delay every response.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Fault: end every open watch this often (seconds).
    #[arg(long)]
    drop_watches_every: Option<f64>,
    /// Fault: compact history and drop watches this often (seconds), so
    /// resuming clients get 410 Expired.
    #[arg(long)]
    expire_every: Option<f64>,
    /// Which kube-apiserver to behave as: v1.20 (the default); v1.36 —
    /// streaming lists (`sendInitialEvents`), and consistent reads served
    /// from a watch cache made fresh by progress notifications, which its
    /// bookmarks then carry; or v1.35 to v1.21 (as v1.36, their Tables
    /// and protobuf their own).
    #[arg(long = "version", value_name = "VERSION", default_value = "v1.20", value_parser = parse_personality)]
    personality: Personality,
}

impl SimArgs {
    fn options(&self) -> Result<SimOptions, CliError> {
        if !(self.churn >= 0.0 && self.churn.is_finite()) {
            return Err(CliError::Flag(format!(
                "--churn {} must be a non-negative number",
                self.churn
            )));
        }
        let every = |flag: &str, v: Option<f64>| match v {
            None => Ok(None),
            Some(s) if s > 0.0 && s.is_finite() => Ok(Some(Duration::from_secs_f64(s))),
            Some(s) => Err(CliError::Flag(format!(
                "--{flag} {s} must be a positive number of seconds"
            ))),
        };
        let mut faults = vec![];
        if self.fail_requests > 0 {
            faults.push(FaultCommand::Errors(self.fail_requests));
        }
        if self.latency_ms > 0 {
            faults.push(FaultCommand::LatencyMs(self.latency_ms));
        }
        let mut schedule = vec![];
        if let Some(d) = every("drop-watches-every", self.drop_watches_every)? {
            schedule.push((d, FaultCommand::DropWatches));
        }
        if let Some(d) = every("expire-every", self.expire_every)? {
            schedule.push((d, FaultCommand::Expire));
        }
        Ok(SimOptions {
            namespaces: self.namespaces,
            pods: self.pods,
            configmaps: self.configmaps,
            nodes: self.nodes,
            churn: self.churn,
            seed: self.seed,
            faults,
            fault_schedule: schedule,
            personality: self.personality,
            ..Default::default()
        })
    }
}

#[derive(clap::Args)]
pub struct DemoArgs {
    /// Where the proxy listens; point kubectl --server here.
    #[arg(long, default_value = "127.0.0.1:8001")]
    listen: String,
    /// Where the simulated apiserver listens.
    #[arg(long, default_value = "127.0.0.1:0")]
    sim_listen: String,
    /// Pods the simulator generates (in every phase, owned by deployments).
    #[arg(long, default_value_t = 2000)]
    pods: usize,
    /// ConfigMaps the simulator generates.
    #[arg(long, default_value_t = 500)]
    configmaps: usize,
    /// Pod updates per second, as kubelets and controllers make them.
    #[arg(long, default_value_t = 2.0)]
    churn: f64,
    /// Which kube-apiserver the simulator behaves as: v1.36 (the default:
    /// kubecache proves its consistent reads fresh, quiet types too),
    /// v1.35 to v1.21 (as v1.36, their Tables and protobuf their own)
    /// or v1.20.
    #[arg(long = "version", value_name = "VERSION", default_value = "v1.36", value_parser = parse_personality)]
    personality: Personality,
}

/// `sim`: the simulator alone.
pub fn run(args: SimArgs, log_format: Option<LogFormat>) -> Result<(), CliError> {
    let opts = args.options()?;
    let listen = parse_addr(&args.listen)?;
    init_tracing(log_format.unwrap_or_default());
    runtime().block_on(run_sim(opts, listen))
}

/// `demo`: the simulator with the proxy in front of it.
pub fn demo(args: DemoArgs, log_format: Option<LogFormat>) -> Result<(), CliError> {
    let listen = parse_addr(&args.listen)?;
    let sim_listen = parse_addr(&args.sim_listen)?;
    init_tracing(log_format.unwrap_or_default());
    let opts = SimOptions {
        namespaces: 8,
        nodes: 20,
        pods: args.pods,
        configmaps: args.configmaps,
        churn: args.churn,
        personality: args.personality,
        ..Default::default()
    };
    runtime().block_on(run_demo(opts, sim_listen, listen))
}

fn parse_personality(s: &str) -> Result<Personality, String> {
    Personality::parse(s)
        .ok_or_else(|| format!("{s:?} is not a version the simulator knows: v1.20 to v1.36"))
}

/// The simulator's objects, made (a few seconds for 100,000 pods), saying
/// so before and after.
fn generate(opts: &SimOptions) -> Arc<Sim> {
    tracing::info!(target: "kubecache",
        pods = opts.pods,
        configmaps = opts.configmaps,
        namespaces = opts.namespaces,
        nodes = opts.nodes,
        "simulator: generating objects"
    );
    let started = std::time::Instant::now();
    let sim = Sim::new(opts);
    tracing::info!(target: "kubecache", took = ?started.elapsed(), "simulator: objects generated");
    sim
}

async fn run_sim(opts: SimOptions, addr: SocketAddr) -> Result<(), CliError> {
    let (listener, bound) = listen(addr).await?;
    let sim = generate(&opts);
    sim.start_churn(opts.churn);
    sim.start_faults(&opts);
    tracing::info!(target: "kubecache", listen = %bound, pods = opts.pods, "simulated apiserver serving");
    kubecache_sim::run(sim, listener, shutdown_signal()).await;
    Ok(())
}

async fn run_demo(
    opts: SimOptions,
    sim_listen: SocketAddr,
    listen_on: SocketAddr,
) -> Result<(), CliError> {
    let (sim_listener, sim_addr) = listen(sim_listen).await?;
    let sim = generate(&opts);
    sim.start_churn(opts.churn);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(kubecache_sim::run(sim, sim_listener, async {
        let _ = stop_rx.await;
    }));
    let cfg = Settings {
        upstream: Some(format!("http://{sim_addr}")),
        listen: Some(listen_on.to_string()),
        eager: vec![
            "v1/pods".into(),
            "v1/configmaps".into(),
            "v1/namespaces".into(),
            "v1/nodes".into(),
            "apps/v1/deployments".into(),
        ],
        // kubecache's defaults: kubectl's (consistent) lists are answered
        // from the cache once it is proven fresh (README, "consistentReads").
        ..Default::default()
    }
    .into_serve()?;
    let r = run_serve(cfg, |listen| demo_guide(sim_addr, listen)).await;
    let _ = stop_tx.send(());
    r
}

/// What the demo says once it serves: what to try, and which of it the
/// cache answers and which goes to the simulator.
fn demo_guide(sim: SocketAddr, listen: SocketAddr) {
    let k = format!("kubectl --server http://{listen}");
    eprintln!(
        "kubecache demo: simulated apiserver on http://{sim}, kubecache on http://{listen}\n\
         (kubectl's lists are answered from the cache once it is proven to hold every\n\
         \x20write made before them: at once for a busy type, within a second or two for a quiet one)\n\
         answered from the cache:\n\
         \x20 {k} get pods -A\n\
         \x20 {k} get deploy,cm,ns,no -A -l app=web\n\
         \x20 {k} get pods -n default -o wide --watch --request-timeout=5s\n\
         \x20 curl -s 'http://{listen}/api/v1/pods?resourceVersion=0' | head -c 300\n\
         forwarded to the simulator:\n\
         \x20 {k} create configmap demo -n default --from-literal=greeting=hello\n\
         \x20 {k} label pods -n default --all demo=yes --overwrite\n\
         \x20 {k} logs -n team-02 deploy/web --tail=1\n\
         \x20 {k} explain deployment.spec.replicas\n\
         what went where: http://{listen}/debug/cache (a page per type: served, forwarded) and\n\
         \x20 curl -s http://{listen}/metrics | grep -E 'kubecache_forwarded_requests_total|apiserver_request_total'"
    );
}
