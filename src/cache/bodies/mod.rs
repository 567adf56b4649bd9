//! What the cache keeps of the bodies it answers with, so that many clients
//! asking for the same list between two events share one assembly, one
//! indentation and one compression: finished bodies per snapshot (`kept`),
//! each object's gzip piece (`pieces`) to stitch gzipped lists from, and
//! the compression both use (`compress`), within one byte budget
//! (`budget`); `finish` lays a body out and compresses it as it goes out,
//! and `stream` writes a list as the client reads it, for lists not kept.

pub mod budget;
pub mod compress;
pub mod finish;
pub mod kept;
pub mod pieces;
pub mod stream;

pub use budget::Budget;
pub use finish::{FinishError, Finished, Output};
pub use kept::{BodyCache, BodyKey, ReprKey};
pub use pieces::Pieces;
