//! What every request passes through before it reaches a route, one concern
//! per module.

pub mod host;
