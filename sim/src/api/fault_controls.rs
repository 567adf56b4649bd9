//! `/sim/faults`: the fault controls over HTTP, with which tests and demos
//! switch faults at run time; the fault state they switch is `sim::faults`.

use super::json::value;
use crate::faults::{FaultCommand, FaultCommandError};
use crate::Sim;
use http::{Response, StatusCode};
use kubecache::body::Body;

/// `/sim/faults?key=value&…`: all commands are checked before any applies,
/// and watches are dropped before any are unstalled, so that a watch
/// unstalled and dropped by one request sends nothing it held back.
pub(super) fn faults(sim: &Sim, query: Option<&str>) -> Result<Response<Body>, FaultCommandError> {
    let mut commands = url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .map(|(k, v)| FaultCommand::parse(&k, &v))
        .collect::<Result<Vec<_>, _>>()?;
    commands.sort_by_key(|c| !matches!(c, FaultCommand::DropWatches | FaultCommand::Expire));
    for c in &commands {
        sim.fault(c);
    }
    Ok(value(StatusCode::OK, sim.faults.describe()))
}
